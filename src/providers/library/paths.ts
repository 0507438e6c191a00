/** Whether the library-relative folder `rel` is `root` or inside it ('' is the library root). */
export function isWithin(rel: string, root: string): boolean {
  return root === '' || rel === root || rel.startsWith(`${root}/`);
}
