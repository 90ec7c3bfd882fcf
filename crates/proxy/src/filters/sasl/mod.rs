//! The SASL principal: who a client is, read from its SASL exchange or its certificate and
//! trusted once the broker accepts it ([`identity`], with the frames read in `frames`, each
//! mechanism's claimed name in `mechanisms` and a certificate's subject in `x500`), and the
//! filter that reads the exchange ([`Sasl`]).

mod filter;
mod frames;
pub mod identity;
mod mechanisms;
mod x500;

pub use filter::Sasl;
