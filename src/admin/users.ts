import { apiKeyAnswer, createdUserAnswer, userAnswer, userListAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { orNotFound, unwrap } from "../lib/http/errors";
import { createUserBody, patchUserBody } from "../domain/users";
import { createUser as addPanelUser } from "../services/users/create";
import { rotateUserKey } from "../services/users/rotate-key";
import { setUserDisabled } from "../services/users/set-disabled";
import { getUser, listUsers, type User } from "../store/users";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

function userView(user: User) {
  return { id: user.id, email: user.email, name: user.name, disabled: user.disabled, created_at: isoTime(user.createdAt) };
}

const noSuchUser = (userId: string) => `No user with id "${userId}" in this panel`;

const createUser = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/users",
  role: NEEDS.apiKeys,
  response: createdUserAnswer,
  summary: "Create a sub-admin user with an API key (the key is shown only in this answer)",
  status: 201,
  body: createUserBody,
  async handle({ env, db, caller, body, panel }) {
    const { user, apiKey } = unwrap(await addPanelUser(env, db, panel.id, body.email, body.name ?? null, auditorOf(caller)));
    return { ...userView(user), api_key: apiKey };
  },
});

const listPanelUsers = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/users",
  role: NEEDS.read,
  response: userListAnswer,
  summary: "The panel's users (never their keys)",
  async handle({ env, panel }) {
    return { users: (await listUsers(env.DB, panel.id)).map(userView) };
  },
});

const readUser = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/users/:user",
  role: NEEDS.read,
  response: userAnswer,
  summary: "Read a user (never the key)",
  async handle({ env, path, panel }) {
    return userView(await orNotFound(getUser(env.DB, panel.id, path.user), noSuchUser(path.user)));
  },
});

const patchUser = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/users/:user",
  role: NEEDS.apiKeys,
  response: userAnswer,
  summary: "Disable or re-enable a user; a disabled user's key fails authentication",
  body: patchUserBody,
  async handle({ env, db, caller, path, body, panel }) {
    return userView(await orNotFound(setUserDisabled(env, db, panel.id, path.user, body.disabled, auditorOf(caller)), noSuchUser(path.user)));
  },
});

const rotateKey = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/users/:user/api-key",
  role: NEEDS.apiKeys,
  response: apiKeyAnswer,
  summary: "Rotate the user's API key; the old key stops working at once",
  async handle({ env, db, caller, path, panel }) {
    const rotated = await orNotFound(rotateUserKey(env, db, panel.id, path.user, auditorOf(caller)), noSuchUser(path.user));
    return { api_key: rotated.apiKey };
  },
});

export const userRoutes = [createUser, listPanelUsers, readUser, patchUser, rotateKey];
