import { leaveTopicNotice, topicNotice } from "../../domain/unsubscribe-page";
import type { ShardDb } from "../../store/shards";
import { getFormSettings } from "../../store/signup-forms";
import { listTopics, topicOptOutStatement, topicsLeft, type Topic } from "../../store/topics";
import { panelDb } from "../access/shards";
import { consentStatements, type ConsentClient } from "../consent/record";

// A contact's topics (issue 45, item 4): in each until they leave it on the preference page (or
// a topic campaign's unsubscribe page). Each change is stored with its consent record, together.

export interface TopicChoice {
  topic: Topic;
  joined: boolean;
}

/** The panel's topics, each with whether the contact is in it. */
export async function contactTopics(db: ShardDb, panelId: string, contactId: number): Promise<TopicChoice[]> {
  const [topics, left] = await Promise.all([listTopics(db, panelId), topicsLeft(db, panelId, contactId)]);
  return topics.map((topic) => ({ topic, joined: !left.has(topic.id) }));
}

/** Where a recipient changed their topics, as the consent record names it. */
export type TopicChangeVia = "preference_page" | "unsubscribe_page";

/**
 * Sets the contact's topics to `wanted` (topic id: in it); ids the panel has no topic of are
 * ignored (a page posted after a topic was deleted). Only the topics whose state changes are
 * written, each with a topic_join or topic_leave consent record showing `panelName`'s words.
 */
export async function changeContactTopics(
  db: ShardDb,
  panelId: string,
  contactId: number,
  wanted: ReadonlyMap<string, boolean>,
  how: { via: TopicChangeVia; client: ConsentClient; panelName: string },
  now: number,
  settingsDb: ShardDb = db,
): Promise<TopicChoice[]> {
  const current = await contactTopics(db, panelId, contactId);
  const statements: D1PreparedStatement[] = [];
  // The panel's setting, read once for this post's records (not once per changed topic).
  let keepsClient: boolean | undefined;
  for (const { topic, joined } of current) {
    const join = wanted.get(topic.id);
    if (join === undefined || join === joined) continue;
    keepsClient ??= (await getFormSettings(settingsDb, panelId)).consentKeepsClient;
    statements.push(topicOptOutStatement(db, panelId, contactId, topic.id, !join, now));
    statements.push(
      ...(await consentStatements(db, panelId, {
        contactId,
        kind: join ? "topic_join" : "topic_leave",
        listIds: [],
        topic: topic.id,
        via: how.via,
        client: how.client,
        text: how.via === "unsubscribe_page" ? leaveTopicNotice(how.panelName, topic.name) : topicNotice(how.panelName, topic.name, join),
        at: now,
      }, keepsClient)),
    );
  }
  if (statements.length) await db.batch(statements);
  return statements.length ? contactTopics(db, panelId, contactId) : current;
}

/**
 * The preference page's topics of a recipient, after applying the page's `wanted` choices when
 * given. `db` holds the contact (its partition's, where its opt-outs and consent records are;
 * the panel's topics are mirrored there, decision 0041); the panel's settings are the home's.
 */
export async function recipientTopics(
  env: Env,
  panelId: string,
  recipient: { contactId: number; contactDb: ShardDb },
  change?: { wanted: ReadonlyMap<string, boolean>; via: TopicChangeVia; client: ConsentClient; panelName: string },
): Promise<TopicChoice[]> {
  const db = recipient.contactDb;
  if (!change) return contactTopics(db, panelId, recipient.contactId);
  return changeContactTopics(db, panelId, recipient.contactId, change.wanted, change, Date.now(), await panelDb(env, panelId));
}
