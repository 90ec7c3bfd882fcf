//! One layer of settings put over a [`Config`]: each setting given replaces the
//! configuration's, each one left out keeps it. The configuration file
//! ([`ConfigFile::apply`](crate::ConfigFile::apply)) and the command line
//! (`elect-leaders proxy`, over the file) both put theirs through [`Overrides::over`], so
//! that the two cannot merge the same setting two ways.
//!
//! Not here: the settings that do not simply replace (routes and their host names, TLS,
//! the rules): the file replaces them whole, while the command line merges some of them
//! option by option and checks that they go together; each says how, where it reads them.

use std::net::SocketAddr;
use std::time::Duration;

use crate::filters::addresses::DynamicListen;
use crate::{AuditTarget, Config};

/// The settings one source gives; `None`: not given.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Where audit lines go.
    pub audit: Option<AuditTarget>,
    /// [`Config::audit_queue_bytes`].
    pub audit_queue_bytes: Option<usize>,
    /// [`Config::max_connections`].
    pub max_connections: Option<usize>,
    /// [`Config::connection_threads`].
    pub threads: Option<usize>,
    /// [`Config::max_frame_size`].
    pub max_frame_size: Option<usize>,
    /// [`Config::max_buffered_bytes`].
    pub max_buffered_bytes: Option<usize>,
    /// [`Config::refused_bytes_per_second`].
    pub refused_bytes_per_second: Option<usize>,
    /// [`Config::idle_timeout`].
    pub idle_timeout: Option<Duration>,
    /// [`Config::frame_timeout`].
    pub frame_timeout: Option<Duration>,
    /// [`Config::upstream_connect_timeout`].
    pub upstream_connect_timeout: Option<Duration>,
    /// [`Config::request_timeout`].
    pub request_timeout: Option<Duration>,
    /// [`Config::drain_timeout`].
    pub drain_timeout: Option<Duration>,
    /// [`Config::max_connection_age`].
    pub max_connection_age: Option<Duration>,
    /// [`Config::proxy_protocol_from`]: the sources given replace the file's.
    pub proxy_protocol_from: Option<Vec<ipnet::IpNet>>,
    /// [`Config::advertise_host`].
    pub advertise_host: Option<String>,
    /// [`Config::dynamic_listen`].
    pub dynamic_listen: Option<DynamicListen>,
    /// [`Config::metrics_listen`].
    pub metrics_listen: Option<SocketAddr>,
}

impl Overrides {
    /// Puts each setting given into `config`, leaving the rest as it is.
    pub fn over(self, config: &mut Config) {
        if let Some(audit) = self.audit {
            config.audit = audit;
        }
        let set = |value: Option<usize>, field: &mut usize| *field = value.unwrap_or(*field);
        set(self.audit_queue_bytes, &mut config.audit_queue_bytes);
        set(self.max_connections, &mut config.max_connections);
        set(self.threads, &mut config.connection_threads);
        set(self.max_frame_size, &mut config.max_frame_size);
        set(self.max_buffered_bytes, &mut config.max_buffered_bytes);
        set(
            self.refused_bytes_per_second,
            &mut config.refused_bytes_per_second,
        );
        let set = |value: Option<Duration>, field: &mut Duration| *field = value.unwrap_or(*field);
        set(self.idle_timeout, &mut config.idle_timeout);
        set(self.frame_timeout, &mut config.frame_timeout);
        set(
            self.upstream_connect_timeout,
            &mut config.upstream_connect_timeout,
        );
        set(self.request_timeout, &mut config.request_timeout);
        set(self.drain_timeout, &mut config.drain_timeout);
        if self.max_connection_age.is_some() {
            config.max_connection_age = self.max_connection_age;
        }
        if let Some(sources) = self.proxy_protocol_from {
            config.proxy_protocol_from = sources;
        }
        if self.advertise_host.is_some() {
            config.advertise_host = self.advertise_host;
        }
        if self.dynamic_listen.is_some() {
            config.dynamic_listen = self.dynamic_listen;
        }
        if self.metrics_listen.is_some() {
            config.metrics_listen = self.metrics_listen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_given_replaces_and_the_rest_stays() {
        let mut config = Config {
            advertise_host: Some("kept.example".into()),
            ..Config::default()
        };
        let before_idle = config.idle_timeout;
        Overrides {
            max_frame_size: Some(1234),
            request_timeout: Some(Duration::from_secs(7)),
            audit: Some(AuditTarget::Stdout),
            ..Overrides::default()
        }
        .over(&mut config);
        assert_eq!(config.max_frame_size, 1234);
        assert_eq!(config.request_timeout, Duration::from_secs(7));
        assert_eq!(config.audit, AuditTarget::Stdout);
        assert_eq!(config.idle_timeout, before_idle);
        assert_eq!(config.advertise_host.as_deref(), Some("kept.example"));
    }
}
