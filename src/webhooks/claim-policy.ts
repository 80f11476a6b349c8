// Which due deliveries a claim takes, for every engine. Each active subscription that is not saturated offers
// its oldest due deliveries (the engine finds them with SQL); the claim takes the first of each subscription
// before the second of any, oldest first within a rank, so one subscription's backlog cannot take every slot.

/** A due delivery a subscription offers; `due` is its next attempt time in ms. */
export interface Offer {
  id: string;
  subscriptionId: string;
  due: number;
}

/** The ids to claim, at most `limit`, in the order they should be sent. */
export function pickClaims(offers: readonly Offer[], limit: number): string[] {
  if (limit <= 0 || offers.length === 0) return [];
  const byAge = [...offers].sort(olderFirst);
  const seen = new Map<string, number>();
  const ranked = byAge.map((o) => {
    const rank = seen.get(o.subscriptionId) ?? 0;
    seen.set(o.subscriptionId, rank + 1);
    return { offer: o, rank };
  });
  ranked.sort((a, b) => a.rank - b.rank || olderFirst(a.offer, b.offer));
  return ranked.slice(0, limit).map((r) => r.offer.id);
}

function olderFirst(a: Offer, b: Offer): number {
  return a.due - b.due || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
