/**
 * Runs s3rver in its own process. s3rver makes its ListObjectsV2 continuation tokens with DES,
 * which OpenSSL 3 serves only from its legacy provider, so the parent starts this file with
 * `--openssl-legacy-provider` (the hub's own process keeps the default provider set).
 * argv: <directory> <bucket>; prints `{"port":N}` once listening.
 */
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
const addr = await server.run();
process.stdout.write(`${JSON.stringify({ port: addr.port })}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
