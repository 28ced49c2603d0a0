//! Registration with name servers (name-server reference §8): `addr` (`namesrvAddr`'s syntax),
//! `settings` (the keys),
//! `client` (one kept-open connection per name server), `registrar` (the periodic thread and the
//! registration of a new topic from its creating thread), `hook` (how processors reach it).

pub mod addr;
pub(crate) mod client;
pub mod hook;
mod registrar;
mod settings;

pub use registrar::Registrar;
pub use settings::Settings;
