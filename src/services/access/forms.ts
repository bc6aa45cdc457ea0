import type { AttributeSchema } from "../../domain/attributes";
import { FORM_ID, type SignupForm } from "../../domain/signup-forms";
import { TtlCache } from "../../lib/ttl-cache";
import { loadAttributeSchema } from "../../store/attributes";
import { getPanel, type Panel } from "../../store/panels";
import { shardOf, type ShardDb } from "../../store/shards";
import { getFormSettings, getSignupForm, panelOfForm, type FormSettings } from "../../store/signup-forms";
import { CALLER_CACHE_MS } from "./api-keys";

/** What a public form's page and submissions need: its panel, that panel's shard, schema and form settings. */
export interface PublicForm {
  panel: Panel;
  db: ShardDb;
  form: SignupForm;
  schema: AttributeSchema;
  settings: FormSettings;
}

/**
 * How long an isolate trusts a public form's lookup (directory, panel, form, schema, form
 * settings): without it every submission paid five D1 reads before its own work
 * (bench:forms). Same freshness as the API-key lookup: a form, its panel or the panel's
 * settings changed through another isolate takes effect within this time; in the isolate that
 * made the change, at once (admin writes call forgetPublicForms). Unknown forms are never cached.
 */
const forms = new TtlCache<Omit<PublicForm, "db">>(CALLER_CACHE_MS, 1000);

/** Drops every cached form; admin writes and a panel's switch of shard call it. */
export function forgetPublicForms(): void {
  forms.clear();
}

/** The form its public id names, with its panel; null for an id that is not a form's. */
export async function findPublicForm(env: Env, formId: string): Promise<PublicForm | null> {
  if (!FORM_ID.test(formId)) return null;
  const cached = forms.get(formId);
  if (cached) return { ...cached, db: shardOf(env, cached.panel) };
  const panelId = await panelOfForm(env.DB, formId);
  const panel = panelId ? await getPanel(env.DB, panelId) : null;
  if (!panel) return null;
  const db = shardOf(env, panel);
  const [form, schema, settings] = await Promise.all([getSignupForm(db, panel.id, formId), loadAttributeSchema(db, panel.id), getFormSettings(db, panel.id)]);
  if (!form) return null;
  const found = { panel, form, schema, settings };
  forms.set(formId, found);
  return { ...found, db };
}
