//! Notifications of review changes, below the families that report them
//! (only reviews so far; the subscription routes are the reviews family's,
//! since a subscription is a review's sub-resource reached with a review
//! token). No HTTP server in here: [`service`] keeps subscriptions,
//! [`deliver`] sends what the catalog's outbox holds, [`target`] says where
//! a notification may go, [`sign`] signs webhooks, [`message`] says what is
//! sent. The server never learns plan or comment text: a notification
//! carries ids, numbers, names and the sealed preview the writer's client
//! attached.

pub(crate) mod deliver;
pub(crate) mod message;
pub(crate) mod service;
pub(crate) mod sign;
pub(crate) mod target;

pub use service::NotifyConfig;
pub(crate) use service::{NotifyService, SubscribeInput, events_mask};
