import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key, as files (for redis-server) and PEM text (for Node's tls options). */
export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

export interface TestCertificates {
  readonly dir: string;
  /** The CA that signs every certificate below. */
  readonly ca: CertificateFiles;
  /** A CA nobody here uses: trusting it instead of `ca` must fail. */
  readonly otherCa: CertificateFiles;
  /** Server certificate for 127.0.0.1 (IP SAN), valid for a year. */
  readonly server: CertificateFiles;
  /** The same server key and name, but the certificate expired in 2020. */
  readonly expiredServer: CertificateFiles;
  /** Client certificate for mutual TLS. */
  readonly client: CertificateFiles;
  remove(): void;
}

/**
 * Generates a throw-away PKI with the `openssl` command (P-256 keys: fast). The expired
 * certificate is issued with `openssl ca -startdate/-enddate` (OpenSSL 3.0's `x509 -req` cannot
 * set dates in the past).
 */
export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'nrs-tls-'));
  const path = (name: string) => join(dir, name);
  const newKey = (name: string) => openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path(`${name}.key`)]);
  const files = (name: string): CertificateFiles => ({
    certFile: path(`${name}.crt`),
    keyFile: path(`${name}.key`),
    cert: readFileSync(path(`${name}.crt`), 'utf8'),
    key: readFileSync(path(`${name}.key`), 'utf8'),
  });
  const selfSigned = (name: string, subject: string) => {
    newKey(name);
    openssl(['req', '-x509', '-new', '-key', path(`${name}.key`), '-out', path(`${name}.crt`), '-days', '3650', '-subj', subject]);
  };
  const signed = (name: string, subject: string, extensions: string) => {
    newKey(name);
    openssl(['req', '-new', '-key', path(`${name}.key`), '-out', path(`${name}.csr`), '-subj', subject]);
    writeFileSync(path(`${name}.ext`), extensions);
    openssl([
      'x509', '-req', '-in', path(`${name}.csr`), '-CA', path('ca.crt'), '-CAkey', path('ca.key'), '-CAcreateserial',
      '-out', path(`${name}.crt`), '-days', '365', '-extfile', path(`${name}.ext`),
    ]);
  };

  selfSigned('ca', '/CN=nestjs-redis-streams test CA');
  selfSigned('other-ca', '/CN=some other CA');
  signed('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('client', '/CN=worker', 'extendedKeyUsage=clientAuth\n');

  // The expired one: `openssl ca` with explicit dates, over the server's key and request.
  mkdirSync(path('ca-db'));
  writeFileSync(path('ca-db/index.txt'), '');
  writeFileSync(path('ca-db/serial'), '1000\n');
  writeFileSync(
    path('ca.cnf'),
    [
      '[ca]', 'default_ca = test',
      '[test]', `database = ${path('ca-db/index.txt')}`, `serial = ${path('ca-db/serial')}`, `new_certs_dir = ${path('ca-db')}`,
      'default_md = sha256', 'policy = any', 'x509_extensions = server', 'unique_subject = no',
      '[any]', 'commonName = supplied',
      '[server]', 'subjectAltName = IP:127.0.0.1', 'extendedKeyUsage = serverAuth', '',
    ].join('\n'),
  );
  openssl([
    'ca', '-batch', '-notext', '-config', path('ca.cnf'), '-cert', path('ca.crt'), '-keyfile', path('ca.key'),
    '-in', path('server.csr'), '-out', path('expired-server.crt'), '-startdate', '20200101000000Z', '-enddate', '20200102000000Z',
  ]);
  writeFileSync(path('expired-server.key'), readFileSync(path('server.key')));

  return {
    dir,
    ca: files('ca'),
    otherCa: files('other-ca'),
    server: files('server'),
    expiredServer: files('expired-server'),
    client: files('client'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function openssl(args: string[]): void {
  const run = spawnSync('openssl', args, { encoding: 'utf8', timeout: 20_000 });
  if (run.status !== 0) throw new Error(`openssl ${args[0]} failed: ${run.error?.message ?? run.stderr}`);
}
