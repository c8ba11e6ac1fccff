//! Receipts: what every search recorded, in the `receipts` schema
//! (`sql/0004_receipts.sql` and later migrations). This module owns their
//! shapes both ways:
//!
//! - [`write`]: the event and every pool member, in one transaction, before
//!   a search's answer leaves ([`crate::search`]);
//! - [`read`]: the event and its pool as their principal may read them
//!   (`explain_retrieval`, replays), and the operator's reads (the
//!   principal of an event, a sample of recent events, a receipt counted);
//! - [`purge`]: dropping receipts past their retention period.
//!
//! The scoped operations' grant checks (`scope/sql/evidence.sql`,
//! `scope/sql/compare.sql`) also read an event's pool (`receipts.pool_of`),
//! inside the very statement that reads the catalog, so that nothing
//! changes between check and use; they stay with their operations.
//!
//! The runtime role holds no privilege on the receipt tables: it writes and
//! reads receipts only through the functions of `sql/0026`.

pub mod purge;
mod read;
mod write;

pub use purge::PurgeReport;
pub use read::{event_count, tally, Candidate, Event, Receipt, ReceiptSignals, Tally};
pub(crate) use read::{principal_of, read, sample};
pub(crate) use write::{write, EventRecord, ReplayOf};
