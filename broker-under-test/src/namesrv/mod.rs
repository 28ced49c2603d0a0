//! Registration with name servers (name-server reference §8): `settings` (the keys),
//! `client` (one kept-open connection per name server), `registrar` (the thread).

mod client;
mod registrar;
mod settings;

pub use registrar::Registrar;
pub use settings::Settings;
