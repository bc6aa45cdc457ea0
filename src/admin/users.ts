import { apiKeyAnswer, createdUserAnswer, userAnswer, userListAnswer } from "../domain/answers/panels";
import { generateApiKey, hashApiKey } from "../services/access/api-keys";
import { conflict, notFound, orNotFound } from "../lib/http/errors";
import { newId } from "../lib/random";
import { createUserBody, patchUserBody } from "../domain/users";
import { getUser, insertUser, listUsers, replaceKeyHash, setUserDisabled, type User } from "../store/users";
import { isoTime } from "../store/sql";
import { audited } from "./audit";
import { definePanelRoute } from "./route";

function userView(user: User) {
  return { id: user.id, email: user.email, name: user.name, disabled: user.disabled, created_at: isoTime(user.createdAt) };
}

const noSuchUser = (userId: string) => `No user with id "${userId}" in this panel`;

const createUser = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/users",
  role: "owner",
  response: createdUserAnswer,
  summary: "Create a sub-admin user with an API key (the key is shown only in this answer)",
  status: 201,
  body: createUserBody,
  async handle({ env, db, caller, body, panel }) {
    const apiKey = generateApiKey();
    const user: User = { id: newId("usr"), panelId: panel.id, email: body.email, name: body.name ?? null, disabled: false, createdAt: Date.now() };
    if (!(await insertUser(env.DB, user, await hashApiKey(apiKey)))) {
      throw conflict(`email: the panel already has a user with email ${body.email}`, [{ field: "email", message: "already in use in this panel" }]);
    }
    await audited({ db, caller, panel }, "user.created", user.id, { email: user.email });
    return { ...userView(user), api_key: apiKey };
  },
});

const listPanelUsers = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/users",
  role: "viewer",
  response: userListAnswer,
  summary: "The panel's users (never their keys)",
  async handle({ env, panel }) {
    return { users: (await listUsers(env.DB, panel.id)).map(userView) };
  },
});

const readUser = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/users/:user",
  role: "viewer",
  response: userAnswer,
  summary: "Read a user (never the key)",
  async handle({ env, path, panel }) {
    return userView(await orNotFound(getUser(env.DB, panel.id, path.user), noSuchUser(path.user)));
  },
});

const patchUser = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/users/:user",
  role: "owner",
  response: userAnswer,
  summary: "Disable or re-enable a user; a disabled user's key fails authentication",
  body: patchUserBody,
  async handle({ env, db, caller, path, body, panel }) {
    const user = await orNotFound(setUserDisabled(env.DB, panel.id, path.user, body.disabled, Date.now()), noSuchUser(path.user));
    await audited({ db, caller, panel }, body.disabled ? "user.disabled" : "user.enabled", user.id, { email: user.email });
    return userView(user);
  },
});

const rotateKey = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/users/:user/api-key",
  role: "owner",
  response: apiKeyAnswer,
  summary: "Rotate the user's API key; the old key stops working at once",
  async handle({ env, db, caller, path, panel }) {
    const apiKey = generateApiKey();
    if (!(await replaceKeyHash(env.DB, panel.id, path.user, await hashApiKey(apiKey), Date.now()))) throw notFound(noSuchUser(path.user));
    const user = await getUser(env.DB, panel.id, path.user);
    await audited({ db, caller, panel }, "user.key_rotated", path.user, { email: user?.email ?? null });
    return { api_key: apiKey };
  },
});

export const userRoutes = [createUser, listPanelUsers, readUser, patchUser, rotateKey];
