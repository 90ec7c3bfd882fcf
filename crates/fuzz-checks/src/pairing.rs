//! pairing: InFlight against a plain model (a queue), fed requests and responses read from
//! frames with peek_request / peek_response.

use super::*;

/// One step of the `pairing` target.
#[derive(Arbitrary, Debug)]
pub enum PairingOp {
    /// A request: the header bytes of a frame for any API.
    Request {
        /// Its API key, any value.
        api_key: i16,
        /// Its version, any value.
        api_version: i16,
        /// Its correlation id, small so that responses often match one.
        correlation_id: u8,
    },
    /// A response with this correlation id.
    Response {
        /// The correlation id, small so that it often matches a request.
        correlation_id: u8,
    },
    /// A correlation id far from the small ones.
    ResponseAny {
        /// The correlation id, any value.
        correlation_id: i32,
    },
    /// The connection closed.
    Clear,
}

/// The `pairing` target: `InFlight` against a queue, fed the steps the input makes.
pub fn check_pairing(data: &[u8]) {
    let Ok(ops) = Vec::<PairingOp>::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    pairing::<1>(&ops);
    pairing::<5>(&ops);
}

pub(crate) fn pairing<const N: usize>(ops: &[PairingOp]) {
    use kafka_elect_leaders::{peek_request, peek_response, InFlight, InFlightFull, Pending};
    use std::collections::VecDeque;
    let mut tracker = InFlight::<N>::new();
    let mut model: VecDeque<Pending> = VecDeque::new();
    for op in ops {
        match *op {
            PairingOp::Request {
                api_key,
                api_version,
                correlation_id,
            } => {
                let mut frame = 8i32.to_be_bytes().to_vec();
                frame.extend_from_slice(&api_key.to_be_bytes());
                frame.extend_from_slice(&api_version.to_be_bytes());
                frame.extend_from_slice(&i32::from(correlation_id).to_be_bytes());
                let peek = peek_request(&frame).expect("a request header peeks");
                let pending = Pending::from(peek);
                assert_eq!(
                    (pending.api_key, pending.api_version, pending.correlation_id),
                    (api_key, api_version, i32::from(correlation_id))
                );
                assert_eq!(
                    pending.is_elect_leaders(),
                    api_key == API_KEY && is_supported(api_version)
                );
                let got = tracker.push(pending);
                if model.len() == N {
                    assert_eq!(got, Err(InFlightFull { capacity: N }));
                } else {
                    assert_eq!(got, Ok(()));
                    model.push_back(pending);
                }
            }
            PairingOp::Response { correlation_id } => {
                answer(&mut tracker, &mut model, i32::from(correlation_id));
            }
            PairingOp::ResponseAny { correlation_id } => {
                answer(&mut tracker, &mut model, correlation_id);
            }
            PairingOp::Clear => {
                tracker.clear();
                model.clear();
            }
        }
        assert_eq!(tracker.len(), model.len());
        assert_eq!(tracker.is_empty(), model.is_empty());
        assert_eq!(tracker.capacity(), N);
        assert!(tracker.iter().eq(model.iter()));
        assert!(tracker.iter().rev().eq(model.iter().rev()));
        assert_eq!(tracker.iter().len(), model.len());
    }

    fn answer<const N: usize>(
        tracker: &mut InFlight<N>,
        model: &mut VecDeque<Pending>,
        correlation_id: i32,
    ) {
        let mut frame = 4i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&correlation_id.to_be_bytes());
        let peek = peek_response(&frame).expect("a response header peeks");
        assert_eq!(peek.correlation_id, correlation_id);
        let got = tracker.answer(peek.correlation_id);
        let want = model
            .iter()
            .position(|p| p.correlation_id == correlation_id)
            .map(|position| {
                let request = model[position];
                model.drain(..=position);
                kafka_elect_leaders::Answered {
                    request,
                    skipped: position,
                }
            });
        assert_eq!(got, want);
    }
}
