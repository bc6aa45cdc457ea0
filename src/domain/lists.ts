/** List names are unique within a panel regardless of case (CONTRACT 2.2). */
export function listNameKey(name: string): string {
  return name.trim().toLowerCase();
}

export const MAX_LIST_NAME_LENGTH = 255;
export const MAX_LIST_DESCRIPTION_LENGTH = 1000;
