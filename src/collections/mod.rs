//! Collections: documents stored as bytes the database cannot read, beside one
//! real, indexed column per declared field that it can.
//!
//! Guarantee: a collection's rows change only inside a worker's write
//! transaction (with its key/value changes, as one commit), or inside a read's
//! savepoint that is always rolled back. Every name that reaches SQL text is a
//! declared name that passed [`valid_name`], and quoted; every value is bound.
//!
//! Schema, per declared collection `orders` with fields `status`, `total`:
//!
//! ```text
//! "c_orders"(id TEXT PRIMARY KEY, tag INTEGER, doc BLOB, "f_status", "f_total")
//! index "orders.status" ON "c_orders"("f_status", id)      one per field
//! fields(collection, field, type, active)                  what each column holds
//! ```
//!
//! Field columns have no declared type, so SQLite never converts what is bound
//! to them: a field's type is this crate's bookkeeping (the `fields` table), and
//! a changed type is a new backfill, not a column affinity fighting it. The
//! index includes `id` because `id` breaks ties in every ordered read.
//!
//! Nothing is dropped: a field or collection that leaves the declaration keeps
//! its column or table, marked inactive, and is backfilled again if declared
//! again (its column was not kept up to date meanwhile).

mod evolve;
mod query;
mod schema;
#[cfg(test)]
mod tests;
mod writes;

pub use evolve::*;
pub use query::*;
pub use schema::*;
pub use writes::*;
