import { topicAnswer, topicDeletedAnswer, topicListAnswer } from "../domain/answers/topics";
import { NEEDS } from "../domain/permissions";
import { topicBody } from "../domain/topics";
import { orNotFound, unwrap } from "../lib/http/errors";
import { mirrorShards, panelOwningShards } from "../services/access/partitions";
import { createTopic, noSuchTopicMessage, removeTopic, replaceTopic } from "../services/topics/topics";
import { isoTime } from "../store/sql";
import { getTopic, listTopics, type Topic } from "../store/topics";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// A panel's topics (issue 45, item 4): the subscription groups of its preference page.

function topicView(t: Topic) {
  return { id: t.id, name: t.name, description: t.description, created_at: isoTime(t.createdAt), updated_at: isoTime(t.updatedAt) };
}

const list = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/topics",
  role: NEEDS.read,
  response: topicListAnswer,
  summary: "The panel's topics by name",
  async handle({ panel, db }) {
    return { topics: (await listTopics(db, panel.id)).map(topicView) };
  },
});

const create = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/topics",
  role: NEEDS.topics,
  response: topicAnswer,
  summary: "Add a topic (name unique in the panel, description); every contact is in it until they leave it on the preference page",
  status: 201,
  body: topicBody,
  async handle({ env, caller, body, panel, db }) {
    return topicView(unwrap(await createTopic(db, panel.id, mirrorShards(env, panel), body, auditorOf(caller))));
  },
});

const read = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/topics/:id",
  role: NEEDS.read,
  response: topicAnswer,
  summary: "Read a topic",
  async handle({ path, panel, db }) {
    return topicView(await orNotFound(getTopic(db, panel.id, path.id), noSuchTopicMessage(path.id)));
  },
});

const replace = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/topics/:id",
  role: NEEDS.topics,
  response: topicAnswer,
  summary: "Rename a topic or change its description; who left it stays out",
  body: topicBody,
  async handle({ env, caller, body, path, panel, db }) {
    return topicView(unwrap(await replaceTopic(db, panel.id, mirrorShards(env, panel), path.id, body, auditorOf(caller))));
  },
});

const remove = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/topics/:id",
  role: NEEDS.topics,
  response: topicDeletedAnswer,
  summary: "Delete a topic and its contacts' opt-outs; campaigns that named it then reach their whole audience",
  async handle({ env, caller, path, panel, db }) {
    unwrap(await removeTopic(panelOwningShards(env, panel, db), panel.id, path.id, auditorOf(caller)));
    return { deleted: true as const };
  },
});

export const topicRoutes = [list, create, read, replace, remove];
