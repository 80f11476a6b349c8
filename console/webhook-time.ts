// A time the API gives, as the Webhooks view's files show it.

/** An API time as people read it, in UTC to the second. */
export function when(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}
