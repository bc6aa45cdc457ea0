/** List names are unique within a panel regardless of case (CONTRACT 2.2). */
export function listNameKey(name: string): string {
  return name.trim().toLowerCase();
}

export const MAX_LIST_NAME_LENGTH = 255;
export const MAX_LIST_DESCRIPTION_LENGTH = 1000;

/** A campaign or journey that names a list or segment, with its status: what blocks its delete. */
export interface AudienceUser {
  kind: "campaign" | "journey";
  name: string;
  status: string;
}

/** `campaign 'Spring' (scheduled), campaign 'Sale' (sending) and journey 'Welcome' (running)`. */
export function usersInWords(users: readonly AudienceUser[]): string {
  const named = users.map((user) => `${user.kind} '${user.name}' (${user.status})`);
  return named.length > 1 ? `${named.slice(0, -1).join(", ")} and ${named.at(-1)}` : named[0]!;
}
