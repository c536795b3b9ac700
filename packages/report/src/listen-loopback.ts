import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Listen on 127.0.0.1 (port 0: any free one); resolves to the port, rejects when the port can't be had. */
export async function listenLoopback(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
}
