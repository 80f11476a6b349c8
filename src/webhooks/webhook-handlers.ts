// HTTP handlers of the webhook subscription operations, keyed by operationId.
// TODO(issue 3, webhooks helper): temporary placeholders until the webhook service lands.
import { AppError } from '../errors.js';

const pending = async () => {
  throw new AppError('INTERNAL', 'Webhooks are not implemented yet.');
};

export function webhookHandlers() {
  return {
    createWebhook: pending,
    listWebhooks: pending,
    getWebhook: pending,
    deleteWebhook: pending,
    listWebhookDeliveries: pending,
    retryWebhookDelivery: pending,
  };
}
