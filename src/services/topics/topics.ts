import type { TopicBody } from "../../domain/topics";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import type { ShardDb } from "../../store/shards";
import { deleteTopic, getTopic, putTopic, topicIdByName, type Topic } from "../../store/topics";
import { mirrorTopics, type MirrorShard, type OwningShards } from "../access/partitions";
import { recordAudit, type Auditor } from "../audit/record";

// A panel's topics (issue 45, item 4): the one home of their writes. Deleting a topic takes its
// opt-outs along; a campaign that named it then reaches everyone its list does. A panel's topics
// live on its home and are mirrored on each shard holding one of its partitions (`mirrors`,
// decision 0041), in the same call, after the home: the opt-outs there name them.

const mirrored = ({ panelId: _, ...t }: Topic) => t;

export const noSuchTopicMessage = (id: string) => `No topic with id "${id}" in this panel`;
const noSuchTopic = (id: string) => refused<never>("not_found", [], noSuchTopicMessage(id));
const nameTaken = (name: string) => refusedField<never>("conflict", "name", `the panel already has a topic named "${name}"`);

export async function createTopic(db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], body: TopicBody, by: Auditor): Promise<Result<Topic>> {
  if (await topicIdByName(db, panelId, body.name)) return nameTaken(body.name);
  const now = Date.now();
  const topic: Topic = { panelId, id: newId("tpc"), name: body.name, description: body.description, createdAt: now, updatedAt: now };
  if (!(await putTopic(db, topic))) return nameTaken(body.name);
  await mirrorTopics(mirrors, panelId, [mirrored(topic)]);
  await recordAudit(db, panelId, by, "topic.created", topic.id, { name: topic.name });
  return succeeded(topic);
}

export async function replaceTopic(db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], id: string, body: TopicBody, by: Auditor): Promise<Result<Topic>> {
  const current = await getTopic(db, panelId, id);
  if (!current) return noSuchTopic(id);
  const holder = await topicIdByName(db, panelId, body.name);
  if (holder !== null && holder !== id) return nameTaken(body.name);
  const next: Topic = { ...current, name: body.name, description: body.description, updatedAt: Date.now() };
  if (!(await putTopic(db, next))) return nameTaken(body.name);
  await mirrorTopics(mirrors, panelId, [mirrored(next)]);
  await recordAudit(db, panelId, by, "topic.edited", id, { name: next.name });
  return succeeded(next);
}

/**
 * `shards`: the panel's (panelOwningShards, the home first). Each mirror's opt-outs of it go with
 * its row there, each shard's within the buckets its map gives it: between a split's switch and
 * its cleaning the source's fenced copies of moved contacts' opt-outs are cleaning's to delete
 * (decision 0047); before, the delete met the fence and answered 503 "nothing was changed".
 */
export async function removeTopic(shards: OwningShards, panelId: string, id: string, by: Auditor): Promise<Result<true>> {
  const [{ db, buckets }, ...mirrors] = shards;
  const current = await getTopic(db, panelId, id);
  if (!current || !(await deleteTopic(db, panelId, id, buckets))) return noSuchTopic(id);
  await Promise.all(mirrors.map((m) => deleteTopic(m.db, panelId, id, m.buckets)));
  await recordAudit(db, panelId, by, "topic.deleted", id, { name: current.name });
  return succeeded(true);
}

/** The topic a campaign names, checked when it is set; refused (invalid, under `field`) when the panel has no such topic. */
export async function namedTopic(db: ShardDb, panelId: string, id: string, field: string): Promise<Result<Topic>> {
  const topic = await getTopic(db, panelId, id);
  return topic ? succeeded(topic) : refusedField("invalid", field, `no topic with id "${id}" in this panel`);
}
