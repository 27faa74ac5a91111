// A dependency that reads window.app once, as it is imported (the way bundled
// features do): shared across runs, it would hold the first run's api.
export const captured = globalThis.window.app;
