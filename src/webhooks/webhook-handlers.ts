// HTTP handlers of the webhook subscription operations, keyed by the operationIds of the OpenAPI document.
import type { FastifyReply } from 'fastify';
import type { OperationRequest } from '../http/contract-routes.js';
import type { ContractSchema } from '../http/contract-types.js';
import type { DeliveryRecord, WebhookSubscription } from './delivery.js';
import { WebhookAddressRefusedError } from './ssrf-guard.js';
import type { WebhookService } from './webhook-service.js';

type Webhook = ContractSchema<'Webhook'>;
type WebhookWithSecret = ContractSchema<'WebhookWithSecret'>;
type WebhookDelivery = ContractSchema<'WebhookDelivery'>;
type WebhookRecoveryResult = ContractSchema<'WebhookRecoveryResult'>;

/** A subscription as the API shows it: never the secret; `disabledReason` only when disabled. */
export function webhookBody(sub: WebhookSubscription): Webhook {
  return {
    id: sub.id,
    url: sub.url,
    ...(sub.description !== null && { description: sub.description }),
    events: sub.events as Webhook['events'],
    format: sub.format,
    active: sub.disabledAt === null,
    ...(sub.disabledAt !== null && sub.disabledReason !== null && { disabledReason: sub.disabledReason }),
    createdAt: sub.createdAt.toISOString(),
  };
}

/** A delivery as the API shows it: absent rather than null for what does not apply. */
export function deliveryBody(d: DeliveryRecord): WebhookDelivery {
  return {
    id: d.id,
    eventId: d.eventId,
    status: d.status,
    ...(d.status === 'pending' && d.nextAttemptAt !== null && { nextAttemptAt: d.nextAttemptAt.toISOString() }),
    createdAt: d.createdAt.toISOString(),
    attempts: d.attempts.map((a) => ({
      at: a.at.toISOString(),
      ...(a.statusCode !== null && { statusCode: a.statusCode }),
      ...(a.error !== null && { error: a.error }),
      durationMs: a.durationMs,
      ...(a.request && { request: { headers: a.request.headers, body: a.request.body } }),
      ...(a.response && {
        response: { headers: a.response.headers, excerpt: a.response.excerpt, ...(a.response.truncated && { truncated: true }) },
      }),
    })),
  };
}

export function webhookHandlers(service: WebhookService) {
  return {
    async createWebhook(request: OperationRequest<'createWebhook'>, reply: FastifyReply): Promise<WebhookWithSecret> {
      const body = request.body;
      let created: Awaited<ReturnType<WebhookService['create']>>;
      try {
        created = await service.create({
          url: body.url,
          ...(body.description !== undefined && { description: body.description }),
          ...(body.events !== undefined && { events: body.events }),
          ...(body.format !== undefined && { format: body.format }),
        });
      } catch (err) {
        // The answer is generic (no DNS oracle); the operator's log says what was found.
        if (err instanceof WebhookAddressRefusedError) request.log.info({ detail: err.detail }, 'webhook URL refused');
        throw err;
      }
      const { subscription, secret } = created;
      reply.code(201).header('location', `/webhooks/${subscription.id}`);
      // The only answer that ever carries the secret.
      return { ...webhookBody(subscription), secret };
    },

    async listWebhooks(): Promise<Webhook[]> {
      return (await service.list()).map(webhookBody);
    },

    async getWebhook(request: OperationRequest<'getWebhook'>): Promise<Webhook> {
      return webhookBody(await service.get(request.params.id));
    },

    async deleteWebhook(request: OperationRequest<'deleteWebhook'>, reply: FastifyReply) {
      await service.remove(request.params.id);
      return reply.code(204).send();
    },

    async listWebhookDeliveries(request: OperationRequest<'listWebhookDeliveries'>): Promise<WebhookDelivery[]> {
      const limit = request.query.limit as number; // defaulted by the schema
      return (await service.deliveries(request.params.id, limit)).map(deliveryBody);
    },

    async retryWebhookDelivery(request: OperationRequest<'retryWebhookDelivery'>, reply: FastifyReply): Promise<WebhookDelivery> {
      const { id, deliveryId } = request.params;
      const delivery = await service.retry(id, deliveryId);
      reply.code(202);
      return deliveryBody(delivery);
    },

    async recoverWebhookDeliveries(request: OperationRequest<'recoverWebhookDeliveries'>, reply: FastifyReply): Promise<WebhookRecoveryResult> {
      const { queued, more } = await service.recover(request.params.id, request.body.since);
      reply.code(202);
      return { queued, more };
    },
  };
}
