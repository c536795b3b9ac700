// A verdaccio registry for the release check, run as its own process (the test's npm calls block its event loop):
//   node verdaccio-server.mjs CONFIG.yaml
// Listens on 127.0.0.1 at a free port and prints `verdaccio listening http://127.0.0.1:PORT/`; SIGTERM closes it.
import { runServer } from "verdaccio";

const [config] = process.argv.slice(2);
if (!config) {
  console.error("usage: node verdaccio-server.mjs CONFIG.yaml");
  process.exit(2);
}
const server = await runServer(config);
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`verdaccio listening http://127.0.0.1:${server.address().port}/\n`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
});
