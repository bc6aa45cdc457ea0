import { z } from "../lib/z";
import { emailAddress, nameText } from "./fields";

/** POST /panels/{panel}/users: a sub-admin user whose API key calls apiv2. */
export const createUserBody = z.strictObject({
  email: emailAddress,
  name: nameText(200).optional(),
});

/** PATCH /panels/{panel}/users/{user}. */
export const patchUserBody = z.object({ disabled: z.boolean() }).strict();
