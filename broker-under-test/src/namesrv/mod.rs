//! Registration with name servers (name-server reference §8): `settings` (the keys),
//! `client` (one kept-open connection per name server), `registrar` (the periodic thread and the
//! registration of a new topic from its creating thread), `hook` (how processors reach it).

mod client;
pub mod hook;
mod registrar;
mod settings;

pub use registrar::Registrar;
pub use settings::Settings;
