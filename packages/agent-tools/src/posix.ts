/** Directory part of a normalised absolute path. */
export function dirnameOf(path: string): string {
  const cut = path.lastIndexOf('/')
  return cut <= 0 ? '/' : path.slice(0, cut)
}
