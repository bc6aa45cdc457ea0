import { ApiError } from "../lib/http/errors";
import { broadcastOperations } from "./broadcast";
import { bulkOperations } from "./bulk";
import { contactOperations } from "./contacts";
import { listOperations } from "./lists";
import type { Operation, OperationTable } from "./operation";

/** Every envelope operation, by `type` then `activity`. */
export const OPERATIONS: Record<string, OperationTable> = {
  contact: { ...contactOperations, ...bulkOperations },
  lists: listOperations,
  email_broadcast: broadcastOperations,
};

/** Activity spellings real clients send for an operation that has another name here. */
const ACTIVITY_ALIASES: Record<string, string> = {
  addsync: "add",
  getalllist: "getall",
  "upload_ contact_and_publish": "upload_contact_and_publish",
};

/** Activities whose `type` is implied when a client leaves it out. */
const IMPLIED_TYPES: Record<string, string> = {
  upload_contact_and_publish: "email_broadcast",
  "upload_ contact_and_publish": "email_broadcast",
};

function unknown(field: string, message: string): ApiError {
  return new ApiError(404, `${field}: ${message}`, [{ field, message }]);
}

/** Finds the operation a call names; type and activity are case sensitive (spec 2.1). */
export function resolveOperation(type: unknown, activity: unknown): Operation {
  if (typeof activity !== "string" || activity === "") {
    throw new ApiError(400, "activity: is required", [{ field: "activity", message: "is required" }]);
  }
  const typeName = typeof type === "string" && type !== "" ? type : IMPLIED_TYPES[activity];
  if (typeName === undefined) throw new ApiError(400, "type: is required", [{ field: "type", message: "is required" }]);
  const table = Object.hasOwn(OPERATIONS, typeName) ? OPERATIONS[typeName]! : undefined;
  if (!table) {
    throw unknown("type", `unknown type "${typeName}"; known types are ${Object.keys(OPERATIONS).join(", ")} (case sensitive)`);
  }
  const name = Object.hasOwn(table, activity) ? activity : ACTIVITY_ALIASES[activity];
  const operation = name !== undefined && Object.hasOwn(table, name) ? table[name] : undefined;
  if (!operation) {
    throw unknown(
      "activity",
      `unknown activity "${activity}" for type "${typeName}"; known activities are ${Object.keys(table).join(", ")} (case sensitive)`,
    );
  }
  return operation;
}
