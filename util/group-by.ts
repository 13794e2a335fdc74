/** Items grouped by a key, the groups in the order their first item came, each group's items in their order. */
export function groupInOrder<T>(items: Iterable<T>, keyOf: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}
