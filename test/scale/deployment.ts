// A whole deployment on loopback, built the way docs/deployment.md (Several instances) says: `plant-store migrate`
// once as a release step, a token made with the CLI, N `plant-store serve` processes on one database, HAProxy
// in front checking /readyz, and a real webhook receiver subscribed through the API.
import type { TestContext } from 'node:test';
import { tmpdir } from 'node:os';
import type { ChildServer } from '../helpers/app.js';
import { runIn, serveIn } from '../helpers/cli.js';
import { clientFor } from '../helpers/client.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { subscribe } from '../helpers/webhooks.js';
import { startHaproxy, type Haproxy, type Scope } from './haproxy.js';
import { eventually } from '../helpers/sleep.js';

export interface Instance extends ChildServer {
  name: string;
  port: number;
}

export interface Deployment {
  databaseUrl: string;
  env: Record<string, string>;
  /** A token with plants:read, plants:write and webhooks:manage, made by `plant-store token create`. */
  token: string;
  instances: Instance[];
  lb: Haproxy;
  /** The receiver of the subscription made through the load balancer. */
  receiver: Receiver;
  subscriptionId: string;
}

/** The environment every instance gets; WEBHOOK_TIMEOUT_MS is short so a dead instance's leases expire in 10 s. */
export function instanceEnv(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    BOOTSTRAP_TOKEN: 'false',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_TIMEOUT_MS: '5000',
  };
}

/** Runs the real CLI with the deployment's environment; throws with its output unless it exits 0. */
export async function cli(env: Record<string, string>, args: string[]): Promise<string> {
  const r = await runIn(tmpdir(), args, env, 60_000);
  if (r.code !== 0) throw new Error(`plant-store ${args.join(' ')} exited ${r.code ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** `plant-store token create`; returns the token's id and secret. */
export async function createTokenCli(env: Record<string, string>, scopes: string, name: string): Promise<{ id: string; secret: string }> {
  const out = await cli(env, ['token', 'create', '--scopes', scopes, '--name', name]);
  const id = /Created token (\S+)/.exec(out)?.[1];
  const secret = out.trim().split('\n').at(-1);
  if (!id || !secret?.startsWith('pst_')) throw new Error(`unexpected token create output: ${out}`);
  return { id, secret };
}

export async function startInstance(scope: Scope, env: Record<string, string>, name: string): Promise<Instance> {
  const server = await serveIn(scope as unknown as TestContext, tmpdir(), env);
  return { ...server, name, port: Number(new URL(server.url).port) };
}

export async function deploy(scope: Scope, databaseUrl: string, options: { instances: number }): Promise<Deployment> {
  const env = instanceEnv(databaseUrl);
  // The release step: the schema is brought up to date once, before any instance starts.
  await cli(env, ['migrate']);
  const { secret: token } = await createTokenCli(env, 'plants:read,plants:write,webhooks:manage', 'scale-test');
  const instances = await Promise.all(Array.from({ length: options.instances }, (_, i) => startInstance(scope, env, `s${i + 1}`)));
  const lb = await startHaproxy(scope, instances.map((i) => ({ name: i.name, port: i.port })));
  await lb.waitFor(Object.fromEntries(instances.map((i) => [i.name, 'UP'])));

  let secret = '';
  const receiver = await startReceiver(scope as unknown as TestContext, () => secret);
  const sub = await subscribe(clientFor(lb.url, token), `${receiver.url}/main`);
  secret = sub.secret;
  return { databaseUrl, env, token, instances, lb, receiver, subscriptionId: sub.id };
}

/** The plant id a newPlant delivery announces (read digit for digit from the raw body). */
export function plantIdOf(body: string): bigint | undefined {
  const m = /"id":(-?\d+)/.exec(body);
  return m ? BigInt(m[1]!) : undefined;
}

/** How many verified deliveries the receiver got per plant id. */
export function deliveriesByPlant(receiver: Receiver): Map<bigint, number> {
  const out = new Map<bigint, number>();
  for (const r of receiver.requests) {
    if (r.verifyError) continue;
    const id = plantIdOf(r.body);
    if (id !== undefined) out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

/** Waits (bounded) until every id in `ids` was delivered at least once; returns those still missing. */
export async function waitForDeliveries(receiver: Receiver, ids: Iterable<bigint>, timeoutMs: number): Promise<bigint[]> {
  const wanted = [...ids];
  let missing = wanted;
  const delivered = () => {
    const got = deliveriesByPlant(receiver);
    return (missing = wanted.filter((id) => !got.has(id))).length === 0;
  };
  await eventually(delivered, 'every id delivered', timeoutMs, 200).catch(() => {});
  return missing;
}
