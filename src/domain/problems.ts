export type { FieldProblem } from "../lib/problems";

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

export const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
export const fail = <T = never>(reason: string): Checked<T> => ({ ok: false, reason });

export function describeJsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a float";
  return typeof value;
}
