// Compiled by api/types.test.js with `tsc --strict --noEmit`: the public types
// accept what API.md says users write, and refuse what they must not.
import { open, restore, DurableWorker, DurableError, codes, type Host, type Stub, type DurableWebSocket, type ServerSocket, type SnapshotReport, type RestoreReport } from 'durable-workers';

class Room extends DurableWorker {
  join(ws: DurableWebSocket, user: string): number {
    const h = this.ctx.acceptWebSocket(ws, [`user:${user}`]);
    h.serializeAttachment({ user });
    this.ctx.setWebSocketAutoResponse({ request: 'ping', response: 'pong' });
    return this.ctx.getWebSockets('user:' + user).length;
  }
  webSocketMessage(ws: DurableWebSocket, data: string | Buffer): void {
    const who = ws.deserializeAttachment<{ user: string }>()?.user;
    for (const peer of this.ctx.getWebSockets()) peer.send(`${who}: ${String(data)} ${this.ctx.getTags(ws).join()}`);
  }
}

async function joinRoom(host: Host, socket: ServerSocket): Promise<number> {
  return host.get(Room, 'lobby').join(socket, 'ann');
}

class Cart extends DurableWorker {
  static workerName = 'Cart';

  async add(item: { sku: string }): Promise<number> {
    const items = this.state.get<Array<{ sku: string }>>('items') ?? [];
    items.push(item);
    this.state.set('items', items);
    return items.length;
  }

  count(): number {
    return (this.state.get<unknown[]>('items') ?? []).length;
  }

  async checkout(): Promise<Date> {
    await this.state.transaction(async () => {
      this.state.delete('items');
    });
    await this.state.sync();
    return new Date();
  }

  stop(reason: 'idle' | 'evicted' | 'close'): void {
    void reason;
  }

  async remind(): Promise<number | null> {
    await this.state.setAlarm(new Date(Date.now() + 60_000), { name: 'remind' });
    await this.state.setAlarm(Date.now() + 1_000);
    await this.state.deleteAlarm();
    return this.state.getAlarm('remind');
  }

  async alarm({ name, scheduledTime, retryCount }: { name: string; scheduledTime: number; retryCount: number }): Promise<void> {
    if (name === 'remind' && retryCount < 3) await this.state.setAlarm(scheduledTime + 60_000, { name });
  }
}

async function main(): Promise<void> {
  const host: Host = await open({ dir: './.data', maxLive: 64, durability: 'relaxed' });
  const cart: Stub<Cart> = host.get(Cart, 'customer-42');
  const n: number = await cart.add({ sku: 'apple' });
  const c: number = await cart.count();
  const when: Date = await cart.checkout();
  // @ts-expect-error hooks are not callable through a stub
  cart.stop('close');
  // @ts-expect-error arguments are checked
  await cart.add(42);
  for await (const id of host.ids(Cart, { prefix: 'customer-' })) console.log(id.toUpperCase());
  const snap: SnapshotReport = await host.backup('./.backup');
  const back: RestoreReport = await restore(snap.dest, './.restored', { only: ['Cart/customer-42'], at: snap.takenAt + snap.ms });
  console.log(back.workers[0]?.class, back.failed.length, snap.bytes);
  const archived: Host = await open({ dir: './.data2', archive: { to: './.archive', retain: '30d', baseEvery: 3_600_000 } });
  const a = archived.stats().archive;
  console.log(a?.records, a?.failure ?? 'ok');
  const then = await restore('./.archive', './.then', { at: Date.now() - 60_000 });
  console.log(then.takenAt);
  // @ts-expect-error retain is a duration, not a boolean
  await open({ dir: './.data3', archive: { to: './.archive', retain: true } });
  // @ts-expect-error only takes Class/id strings
  await restore(snap.dest, './.restored', { only: 'Cart/customer-42' });
  const s0 = host.stats();
  host.on('evicted', (e) => console.log(e.class, e.id, e.reason));
  host.on('alarmFailed', (err, e) => console.log(err, e.class, e.attempt, e.retryAt));
  const alarms = await host.startAlarms({ classes: [Cart] });
  // @ts-expect-error the alarm hook is not callable through a stub
  cart.alarm({ name: '', scheduledTime: 0, retryCount: 0 });
  const at: number | null = await cart.remind();
  await alarms.stop();
  console.log(at, s0.alarmsFired);
  const s = host.stats();
  console.log(n, c, when, s.commits + s.syncs, await host.delete(Cart, 'x'));
  try {
    await cart.add({ sku: 'pear' });
  } catch (err) {
    if (err instanceof DurableError && err.code === codes.BUSY) console.log('busy');
  }
  await host.close();
}

void main;
void joinRoom;

interface Order {
  status: 'open' | 'shipped';
  placedAt: Date;
  total: number;
  note?: string;
}

class Orders extends DurableWorker {
  static collections = { orders: { status: 'text', placedAt: 'date', total: 'real' } } as const;

  async place(id: string, total: number): Promise<number> {
    const orders = this.state.collection<Order>('orders');
    orders.put(id, { status: 'open', placedAt: new Date(), total });
    await orders.update(id, (o) => (o ? { ...o, note: 'checked' } : undefined));
    const open: Order[] = await orders.find({ where: { status: 'open', total: { $gte: 10, $lt: 100 } }, orderBy: ['placedAt', 'desc'], limit: 50 });
    const old = await orders.find({ where: { note: { $in: ['a', 'b'] } }, scan: true });
    const n: number = await orders.count({ placedAt: { $gte: Date.now() - 86_400_000 } });
    const gone: boolean = await orders.delete(id);
    return open.length + old.length + n + Number(gone) + this.state.collection('orders').name.length;
  }
}

async function placeOrder(host: Host): Promise<number> {
  const n = await host.get(Orders, 'shop').place('o1', 12);
  return n + host.stats().queries + host.stats().queriesDeferred + host.stats().docsRead;
}

class Untyped extends DurableWorker {
  // Without `as const`: a declaration is still accepted.
  static collections = { events: { kind: 'text', at: 'date' } };
}
void Untyped;

async function badPut(w: Orders): Promise<void> {
  // @ts-expect-error a document's declared field must match the document type
  w.state.collection<Order>('orders').put('x', { status: 'lost', placedAt: new Date(), total: 1 });
}
void badPut;

async function sharded(): Promise<void> {
  const host = await open({ dir: './.data', shards: { count: 2, module: './workers.js', memoryMb: 256, heartbeatMs: 500 } });
  host.on('shardLost', (err, { shard }) => console.log(err.code, shard));
  await host.close();
}
void sharded;

// Collections typed from their declaration: the class hands the declaration's
// type to DurableWorker, and queries are checked against it.
const shopCollections = { orders: { status: 'text', total: 'real', placedAt: 'date' }, notes: { author: 'text' } } as const;
interface ShopOrder {
  status: string;
  total: number;
  placedAt: Date;
  memo?: string;
}

class Shop extends DurableWorker<typeof shopCollections> {
  static collections = shopCollections;

  async open(): Promise<number> {
    const orders = this.state.collection('orders');
    const found = await orders.find({ where: { status: 'open', total: { $gt: 10 }, placedAt: { $lt: new Date() } }, orderBy: ['total', 'desc'], limit: 5 });
    const typed = this.state.collection<ShopOrder, 'orders'>('orders');
    const mine: ShopOrder[] = await typed.find({ where: { status: { $in: ['open', 'paid'] } } });
    // scan: true reads every document, so any field may be named.
    await orders.find({ where: { memo: 'gift' }, scan: true });
    return found.length + mine.length + (await orders.count({ status: 'shipped' }));
  }

  async wrong(): Promise<void> {
    const orders = this.state.collection('orders');
    // @ts-expect-error `memo` is not a declared field of orders
    await orders.find({ where: { memo: 'gift' } });
    // @ts-expect-error `total` is declared real: a string is not a number
    await orders.find({ where: { total: 'ten' } });
    // @ts-expect-error `author` is declared on notes, not on orders
    await orders.count({ author: 'ann' });
    // @ts-expect-error orderBy names a declared field
    await orders.find({ orderBy: 'memo' });
    // @ts-expect-error `invoices` is not a declared collection
    this.state.collection('invoices');
  }
}
void Shop;
