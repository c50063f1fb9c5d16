// Fails CI when PostgreSQL or Redis is unreachable: the backend tests must run, never skip.
import net from 'node:net';

function check(name, url) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const socket = net.connect({ host: u.hostname, port: Number(u.port) }, () => {
      socket.end();
      resolve(name);
    });
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error(`${name} unreachable at ${u.host}`));
    });
    socket.on('error', (e) => reject(new Error(`${name} unreachable at ${u.host}: ${e.message}`)));
  });
}

try {
  const ok = await Promise.all([check('PostgreSQL', process.env.PG_URL), check('Redis', process.env.REDIS_URL)]);
  console.log(`reachable: ${ok.join(', ')}`);
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
