import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { supportsTls } from '../helpers/redis-server.js';
import { useRedisSentinel } from '../helpers/redis-sentinel.js';
import { runCli } from '../helpers/run-cli.js';
import { createTestCertificates } from '../helpers/tls-certificates.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'sentinel-TLS-pw-5512';
// The plain builds under /work/shared have no TLS: this file runs with a TLS build (Debian's).
const tlsBuild = supportsTls();
const certs = tlsBuild ? createTestCertificates() : undefined;

describe.skipIf(!tlsBuild)('through sentinels over TLS only (primary, replica and sentinels serve TLS)', () => {
  const harness = useRedisSentinel({
    password: PASSWORD,
    tls: certs && { certFile: certs.server.certFile, keyFile: certs.server.keyFile, caFile: certs.ca.certFile },
  });
  beforeAll(() => ensureCompiled(), 120_000);
  afterAll(() => certs?.remove());

  it('options form: tls reaches the primary (not only sentinelTLS the sentinels); events and a request round trip', async () => {
    const set = harness.set;
    const ca = certs!.ca.cert;
    const connection = { sentinels: set.addresses, name: set.name, password: PASSWORD, tls: { ca }, sentinelTLS: { ca } };
    const handled: number[] = [];
    const server = new RedisStreamsServer({ connection, group: 'tls', blockMs: 100, shutdownTimeout: 500, startupTimeout: 5_000 });
    server.addHandler('snt-tls', async (n: number) => void handled.push(n), true);
    server.addHandler('snt-tls-sum', async (numbers: number[]) => numbers.reduce((a, b) => a + b, 0), false);
    const client = new RedisStreamsClient({ connection, commandTimeout: 5_000 });
    try {
      expect(await new Promise<unknown>((resolve) => void server.listen(resolve))).toBeUndefined();
      await Promise.all([1, 2, 3].map((n) => lastValueFrom(client.emit('snt-tls', n))));
      expect(await lastValueFrom(client.send('snt-tls-sum', [20, 22]))).toBe(42);
      await waitFor(() => handled.length === 3, 'three events handled');
      expect(handled.sort()).toEqual([1, 2, 3]);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('URL form in the CLI: rediss+sentinel:// with the CA from NODE_EXTRA_CA_CERTS', async () => {
    const set = harness.set;
    const redis = set.primary.client();
    try {
      await redis.xgroup('CREATE', 'snt-tls-cli', 'g', '0', 'MKSTREAM');
      await redis.xadd('snt-tls-cli', '*', 'n', '1');
    } finally {
      redis.disconnect();
    }
    expect(set.url).toMatch(/^rediss\+sentinel:\/\//);
    const info = await runCli(['info', 'snt-tls-cli', '--url', set.url, '--json'], { NODE_EXTRA_CA_CERTS: certs!.ca.certFile });
    expect(info.stderr).toBe('');
    expect(JSON.parse(info.stdout)).toMatchObject({ key: 'snt-tls-cli', stream: { length: 1 }, groups: [{ name: 'g' }] });
    expect(info.stdout).not.toContain(PASSWORD);
  });
});
