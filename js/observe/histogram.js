'use strict';
// A histogram with fixed bucket bounds, as Prometheus keeps one: a count per
// bucket, the sum and the count. Fixed bounds make an observation a short
// scan and a few additions, with no allocation, so every call can afford one.

/** Bucket upper bounds in milliseconds: 0.1 ms (an in-memory call) to 10 s. */
const MS_BOUNDS = Object.freeze([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]);

class Histogram {
  /** @param {readonly number[]} bounds ascending upper bounds; +Inf is implied */
  constructor(bounds = MS_BOUNDS) {
    this.bounds = bounds;
    /** Per bucket (not cumulative), the last one +Inf. */
    this.counts = new Float64Array(bounds.length + 1);
    this.sum = 0;
    this.count = 0;
  }

  /** Records one value. */
  observe(v) {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    this.counts[i]++;
    this.sum += v;
    this.count++;
  }

  /**
   * The `q` quantile (0–1), interpolated within its bucket as Prometheus's
   * histogram_quantile does; null with no observations.
   */
  quantile(q) {
    if (this.count === 0) return null;
    const rank = q * this.count;
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      const c = this.counts[i];
      if (seen + c >= rank && c > 0) {
        if (i === this.bounds.length) return this.bounds[i - 1];
        const lo = i === 0 ? 0 : this.bounds[i - 1];
        return lo + (this.bounds[i] - lo) * ((rank - seen) / c);
      }
      seen += c;
    }
    return this.bounds[this.bounds.length - 1];
  }

  /** Adds another histogram with the same bounds into this one. */
  add(other) {
    for (let i = 0; i < this.counts.length; i++) this.counts[i] += other.counts[i];
    this.sum += other.sum;
    this.count += other.count;
  }
}

module.exports = { Histogram };
