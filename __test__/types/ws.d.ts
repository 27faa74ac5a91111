// The part of `ws` the examples use, for the examples' type check. The
// package ships no types and @types/ws is not a devDependency; with it, this
// file can go.
declare module 'ws' {
  import { EventEmitter } from 'node:events';
  import type { IncomingMessage } from 'node:http';
  import type { Duplex } from 'node:stream';

  export class WebSocket extends EventEmitter {
    constructor(address: string | URL, options?: object);
    static readonly OPEN: 1;
    readonly readyState: 0 | 1 | 2 | 3;
    send(data: string | Buffer | ArrayBuffer | ArrayBufferView, cb?: (err?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: { noServer?: boolean; port?: number; host?: string; maxPayload?: number });
    readonly clients: Set<WebSocket>;
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, callback: (ws: WebSocket, req: IncomingMessage) => void): void;
    close(callback?: (err?: Error) => void): void;
  }
}
