/**
 * Finding a path in Kbuild's records, where paths stand in command lines and dependency lists:
 * "/a/src" names "/a/src" and "/a/src/x.c", never "/a/src2" or "/a/src.old".
 */

/** The characters that continue a file name. */
const NAME_CHARS = "A-Za-z0-9_.+-";

/** What may follow a path that ends there. */
export const PATH_END_ERE = `($|[^${NAME_CHARS}])`;

export function escapeEre(text: string): string {
  return text.replace(/[.[\]()*+?{}|^$\\]/g, "\\$&");
}

/** An ERE (grep -E) for `path` as a whole path or the directory of a longer one; the match may take one character after it. */
export function pathEre(path: string): string {
  return `${escapeEre(path)}${PATH_END_ERE}`;
}

/** `path` as pathEre matches it, for String.replace (the character after it is not part of the match). */
export function pathRegExp(path: string): RegExp {
  return new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=$|[^${NAME_CHARS}])`, "g");
}

/** A path grep -o matched with pathEre, without the character after it. */
export function trimPathEnd(match: string): string {
  return match.replace(new RegExp(`[^/${NAME_CHARS}]$`), "");
}
