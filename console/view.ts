// What every view of the console is given: the typed client that carries the tab's token, and what that token may
// do. A view offers only the actions its token's scopes allow (least privilege); the API refuses the rest anyway.
import type { PlantStoreClient } from '@plant-store/client';

export type Scope = 'plants:read' | 'plants:write' | 'webhooks:manage' | 'metrics:read' | 'tokens:manage';

export interface ViewProps {
  client: PlantStoreClient;
  /** Whether the signed-in token holds this scope. */
  can: (scope: Scope) => boolean;
}
