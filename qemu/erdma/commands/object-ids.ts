/**
 * The object numbers a command names, checked as every command checks them: a CREATE_* gives its
 * new object a number of 1..limit-1 (0 is never handed out) that is free; the other commands name
 * one that exists. A refusal names the object (status.ts CmdObject).
 */
import type { ObjectTable } from "../objects.ts";
import { CmdStatus, fail } from "../status.ts";

/** The number a CREATE_* gives its new object (qpn, cqn, eqn): in 1..limit-1 and not in use. */
export function checkNewId(table: ObjectTable<unknown>, id: number): void {
  const name = `${table.kind}n`;
  if (id === 0 || !table.inRange(id))
    fail(CmdStatus.BAD_PARAM, `${name} ${id} outside 1..${table.limit - 1}`);
  if (table.has(id)) fail(CmdStatus.EXISTS, `${name} ${id} exists`, { kind: table.kind, id });
}

/** The object a command names by number, or NOT_FOUND (`what` says which of its fields named it). */
export function existing<T>(table: ObjectTable<T>, id: number, what = `${table.kind}n`): T {
  const item = table.get(id);
  if (item === undefined) fail(CmdStatus.NOT_FOUND, `${what} ${id} does not exist`, { kind: table.kind, id });
  return item;
}
