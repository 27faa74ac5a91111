// Polls, one Durable Object each: votes in the object's SQLite database,
// live results over hibernating WebSockets, and a closing time kept as the
// object's alarm. Written against Cloudflare's API only.
//
//   POST /polls/<name>             {"options": ["tea", "coffee"]}  → the poll (created once)
//   POST /polls/<name>/vote        {"voter": "ana", "option": "tea"} → the tally (a voter's last vote counts)
//   GET  /polls/<name>             → { options, tally, closed }
//   POST /polls/<name>/close-in    {"seconds": 60} → the closing time (the alarm)
//   GET  /polls/<name>/live        (Upgrade: websocket) → the tally now, then after every vote
import { DurableObject } from 'cloudflare:workers';

export class Poll extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS options (name TEXT PRIMARY KEY);
      CREATE TABLE IF NOT EXISTS votes (voter TEXT PRIMARY KEY, option TEXT NOT NULL REFERENCES options(name))`);
  }

  /** Sets the options once; later calls change nothing. */
  create(options) {
    if (this.options().length === 0) {
      for (const name of options) this.ctx.storage.sql.exec('INSERT INTO options (name) VALUES (?)', name);
    }
    return this.state();
  }

  /** One vote; the result is sent once the vote is durable (the output gate holds it until then). */
  vote(voter, option) {
    if (this.ctx.storage.kv.get('closed')) throw new Error('the poll is closed');
    if (!this.options().includes(option)) throw new Error(`no option ${JSON.stringify(option)}`);
    this.ctx.storage.sql.exec('INSERT INTO votes (voter, option) VALUES (?, ?) ON CONFLICT (voter) DO UPDATE SET option = excluded.option', voter, option);
    const state = this.state();
    for (const ws of this.ctx.getWebSockets()) ws.send(JSON.stringify(state));
    return state;
  }

  /** Closes the poll `seconds` from now, even if the server restarts meanwhile. */
  async closeIn(seconds) {
    const at = Date.now() + seconds * 1000;
    await this.ctx.storage.setAlarm(at);
    return at;
  }

  async alarm() {
    this.ctx.storage.kv.put('closed', true);
    const state = this.state();
    for (const ws of this.ctx.getWebSockets()) ws.send(JSON.stringify(state));
  }

  state() {
    const tally = Object.fromEntries(this.options().map((o) => [o, 0]));
    for (const { option, n } of this.ctx.storage.sql.exec('SELECT option, count(*) AS n FROM votes GROUP BY option')) tally[option] = n;
    return { options: this.options(), tally, closed: this.ctx.storage.kv.get('closed') ?? false };
  }

  options() {
    return this.ctx.storage.sql
      .exec('SELECT name FROM options ORDER BY rowid')
      .toArray()
      .map((r) => r.name);
  }

  /** A live view: a hibernatable socket, sent the tally now and after each change. */
  async fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket upgrade', { status: 426 });
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    server.send(JSON.stringify(this.state()));
    return new Response(null, { status: 101, webSocket: client });
  }

  webSocketMessage() {
    // A view only listens.
  }
}

export default {
  async fetch(request, env) {
    const [, root, name, action] = new URL(request.url).pathname.split('/');
    if (root !== 'polls' || !name) return new Response('not found', { status: 404 });
    const poll = env.POLLS.getByName(decodeURIComponent(name));
    try {
      if (action === 'live') return poll.fetch(request);
      if (request.method === 'GET' && action === undefined) return Response.json(await poll.state());
      if (request.method !== 'POST') return new Response('method not allowed', { status: 405 });
      const body = await request.json().catch(() => null);
      if (body === null || typeof body !== 'object') return Response.json({ error: 'the body must be a JSON object' }, { status: 400 });
      if (action === undefined) {
        if (!Array.isArray(body.options) || body.options.length < 2 || body.options.length > Number(env.MAX_OPTIONS)) {
          return Response.json({ error: `options: 2 to ${env.MAX_OPTIONS} names` }, { status: 400 });
        }
        return Response.json(await poll.create(body.options.map(String)));
      }
      if (action === 'vote') return Response.json(await poll.vote(String(body.voter), String(body.option)));
      if (action === 'close-in') return Response.json({ closesAt: await poll.closeIn(Number(body.seconds)) });
      return new Response('not found', { status: 404 });
    } catch (err) {
      return Response.json({ error: err.message }, { status: 409 });
    }
  },
};
