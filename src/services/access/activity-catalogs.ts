import { activityNameKey, type ActivityDefinition, type IngestPanel } from "../../domain/activity";
import { TtlCache } from "../../lib/ttl-cache";
import { loadActivityCatalog, type ActivityCatalog } from "../../store/activities";
import { getPanelByClientId } from "../../store/panels";
import { shardOf } from "../../store/shards";

/**
 * How long an isolate trusts what it read of a panel for ingest: the panel its client id
 * names and the panel's activity definitions. Without it every post pays a D1 round trip
 * before its insert. Definitions are never edited once created and an activity id the cache
 * does not know is looked up again before it is refused, so the cache never refuses a
 * defined activity. What staleness does cost: a panel's time-zone change or API mode turned
 * off through another isolate takes effect within this time (at once in the isolate that made
 * the change). Unknown client ids are never cached.
 */
export const CATALOG_CACHE_MS = 10_000;
const catalogs = new TtlCache<ActivityCatalog>(CATALOG_CACHE_MS, 1000);

/** Drops every cached catalog; admin writes call it, like the API-key cache's forgetCallers. */
export function forgetActivityCatalogs(): void {
  catalogs.clear();
}

/** The catalog of the panel `clientId` names (null: no such panel); `fresh` skips the cache. */
export async function activityCatalog(env: Env, clientId: string, fresh = false): Promise<ActivityCatalog | null> {
  const cached = fresh ? undefined : knownActivityCatalog(clientId);
  if (cached) return cached;
  const panel = await getPanelByClientId(env.DB, clientId);
  if (!panel) return null;
  const loaded = await loadActivityCatalog(shardOf(env, panel), panel);
  catalogs.set(clientId, loaded);
  return loaded;
}

/** The catalog activityCatalog would answer from this isolate's cache, without a wait; undefined when it would read. */
export function knownActivityCatalog(clientId: string): ActivityCatalog | undefined {
  return catalogs.get(clientId);
}

/** How a call names an activity: its id in the panel, or its name (any case). */
export type ActivityRef = number | string;

/** The definition an id or a name refers to in the catalog. */
export function definitionOf(catalog: ActivityCatalog, ref: ActivityRef): ActivityDefinition | undefined {
  return typeof ref === "number" ? catalog.activities.get(ref) : catalog.byName.get(activityNameKey(ref));
}

/** Re-reads the catalog once when the posted activities include one it does not know. */
export async function catalogKnowing(env: Env, clientId: string, catalog: ActivityCatalog, refs: Iterable<ActivityRef>): Promise<ActivityCatalog> {
  for (const ref of refs) if (!definitionOf(catalog, ref)) return (await activityCatalog(env, clientId, true)) ?? catalog;
  return catalog;
}

export function ingestPanel(catalog: ActivityCatalog): IngestPanel {
  return {
    primaryKey: catalog.panel.primaryKey,
    primaryKeyType: catalog.primaryKeyType,
    timezone: catalog.panel.timezone,
    unknownAttributes: catalog.panel.unknownAttributes,
  };
}
