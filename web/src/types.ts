// Request bodies come from the Worker's zod schemas (z.input), so the panel cannot send what the
// API would refuse for its shape; answers are described here as the admin routes shape them.
import type { z } from "zod";
import type { panelPatchBody } from "../../src/domain/panels";
import type { createUserBody, patchUserBody } from "../../src/domain/users";
import type { addOperatorBody, changeOperatorBody } from "../../src/domain/operators";

export type PanelPatch = z.input<typeof panelPatchBody>;
export type CreateUser = z.input<typeof createUserBody>;
export type PatchUser = z.input<typeof patchUserBody>;
export type AddOperator = z.input<typeof addOperatorBody>;
export type ChangeOperator = z.input<typeof changeOperatorBody>;

export interface PanelView {
  id: string;
  name: string;
  primary_key: string;
  timezone: string;
  region: string;
  api_mode: boolean;
  client_id: string;
  created_at: string;
  updated_at: string;
}

export interface UserView {
  id: string;
  email: string;
  name: string | null;
  disabled: boolean;
  created_at: string;
}
