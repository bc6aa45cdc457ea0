import { admin } from "../api";
import type { ActivityView, AttributeView, ListView, SegmentView, TopicView, WebhookView } from "../../../src/domain/answers";
import { useLoad } from "../ui";

/** What the side panel offers to choose from: the panel's activities, lists, segments, webhooks, attributes and topics. */
export interface Catalog {
  activities: ActivityView[];
  lists: ListView[];
  segments: SegmentView[];
  webhooks: WebhookView[];
  attributes: AttributeView[];
  topics: TopicView[];
}

/**
 * The names a trigger's parameter clause may test: a scalar parameter by its name, an array
 * parameter by each member (`items.prid`: "any item whose prid ..."), as the server reads them.
 */
export function filterableParams(activity: ActivityView | undefined): string[] {
  return Object.entries(activity?.params ?? {}).flatMap(([name, type]) => (typeof type === "string" ? [name] : Object.keys(type.of).map((member) => `${name}.${member}`)));
}

export function useCatalog(panelId: string): { catalog: Catalog | undefined; error: string | undefined } {
  const { data, error } = useLoad(async (): Promise<Catalog> => {
    const [activities, lists, segments, webhooks, attributes, topics] = await Promise.all([
      admin<{ activities: ActivityView[] }>("GET", panelId, "/activities"),
      admin<{ lists: ListView[] }>("GET", panelId, "/lists"),
      admin<{ segments: SegmentView[] }>("GET", panelId, "/segments"),
      admin<{ webhooks: WebhookView[] }>("GET", panelId, "/webhooks"),
      admin<{ attributes: AttributeView[] }>("GET", panelId, "/attributes"),
      admin<{ topics: TopicView[] }>("GET", panelId, "/topics"),
    ]);
    return { activities: activities.activities, lists: lists.lists, segments: segments.segments, webhooks: webhooks.webhooks, attributes: attributes.attributes, topics: topics.topics };
  }, [panelId]);
  return { catalog: data, error };
}
