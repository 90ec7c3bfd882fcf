//! Lazy lists over validated bytes: structs of varying width ([`List`]) and `[]int32`
//! ([`Int32List`]).
//!
//! A list is built only after the parser has walked and checked every element once, so its
//! iterators decode without an error path: they re-run the same element parser over bytes
//! that are known to be good.

use core::fmt;
use core::iter::FusedIterator;
use core::ops::Range;

use crate::wire::Cx;

pub(crate) mod sealed {
    use crate::wire::{Cx, MResult};
    use nom::OutputMode;

    /// A struct that can stand in a [`List`](super::List): parsed by one grammar, whether
    /// validating (nom's `Check` mode: nothing is built) or iterating (`Emit` mode).
    pub trait Element<'a>: Sized {
        /// The fewest bytes one element can take in this encoding; bounds array counts.
        fn min_size(flexible: bool) -> usize;
        /// Parses one element from a suffix of the frame.
        fn process<OM: OutputMode>(cx: Cx, input: &'a [u8]) -> MResult<'a, OM, Self>;
    }
}
use sealed::Element;

use nom::{Check, Emit, Mode, OutputM, OutputMode, Streaming};

use crate::wire::{MErr, MResult, Validate};

/// One element of a list, parsed by [`List::process_each`]: returns what follows it. A trait
/// rather than a closure so that `#[inline(always)]` holds and the element's grammar is
/// compiled into the list's loop.
pub(crate) trait Step<'a, OM: OutputMode> {
    fn step(&mut self, cx: Cx, input: &'a [u8]) -> Result<&'a [u8], MErr<OM>>;
}

/// Checks each element (nom's `Check` mode): nothing is built.
pub(crate) struct CheckEach<T>(core::marker::PhantomData<fn() -> T>);

impl<T> CheckEach<T> {
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        CheckEach(core::marker::PhantomData)
    }
}

impl<'a, OM: OutputMode, T: Element<'a>> Step<'a, OM> for CheckEach<T> {
    #[inline(always)]
    fn step(&mut self, cx: Cx, input: &'a [u8]) -> Result<&'a [u8], MErr<OM>> {
        Ok(T::process::<Validate<OM>>(cx, input)?.0)
    }
}

/// A lazy list of structs (`TopicPartitions`, `ReplicaElectionResult`, tagged fields, …)
/// whose bytes were validated when the message was parsed.
#[derive(Clone, Copy)]
pub struct List<'a, T> {
    /// The elements' bytes, exactly.
    bytes: &'a [u8],
    /// How many elements `bytes` holds.
    len: usize,
    /// The whole field, count prefix included, as frame offsets.
    start: usize,
    /// Frame offset of the first element.
    elements_offset: usize,
    flexible: bool,
    _element: core::marker::PhantomData<fn() -> T>,
}

impl<'a, T: Element<'a>> List<'a, T> {
    /// Walks `len` elements starting at `elements`, each with `step` (which parses one
    /// element with the element's own grammar, in whatever output mode it needs, and returns
    /// what follows it), and returns the list and the input after it. How the single-pass
    /// visitors hand each element over while it is validated.
    #[inline(always)]
    pub(crate) fn process_each<OM: OutputMode>(
        cx: Cx,
        start: usize,
        len: usize,
        elements: &'a [u8],
        mut step: impl Step<'a, OM>,
    ) -> MResult<'a, OM, Self> {
        // The loop is inlined twice, each time with `flexible` a constant the compiler folds
        // into the element parser, rather than a test of it on every field.
        let mut rest = elements;
        if cx.flexible {
            let cx = Cx {
                flexible: true,
                ..cx
            };
            for _ in 0..len {
                rest = step.step(cx, rest)?;
            }
        } else {
            let cx = Cx {
                flexible: false,
                ..cx
            };
            for _ in 0..len {
                rest = step.step(cx, rest)?;
            }
        }
        Ok((
            rest,
            OM::Output::bind(|| Self::checked(cx, start, len, elements, rest)),
        ))
    }

    /// The list of the `len` elements that lie in `elements` before `rest`, which were
    /// checked; `start` is the offset of the count.
    #[inline(always)]
    pub(crate) fn checked(
        cx: Cx,
        start: usize,
        len: usize,
        elements: &'a [u8],
        rest: &'a [u8],
    ) -> Self {
        List {
            bytes: &elements[..elements.len() - rest.len()],
            len,
            start,
            elements_offset: cx.offset(elements),
            flexible: cx.flexible,
            _element: core::marker::PhantomData,
        }
    }

    /// Iterates over the elements, in wire order.
    pub fn iter(&self) -> ListIter<'a, T> {
        ListIter {
            rest: self.bytes,
            left: self.len,
            cx: Cx {
                end: self.elements_offset + self.bytes.len(),
                flexible: self.flexible,
            },
            _element: core::marker::PhantomData,
        }
    }

    /// The first element, if any.
    pub fn first(&self) -> Option<T> {
        self.iter().next()
    }
}

impl<'a, T> List<'a, T> {
    /// An empty list at `offset` that has no bytes on the wire (tagged fields of a version
    /// that has none).
    pub(crate) const fn absent(offset: usize) -> Self {
        List {
            bytes: &[],
            len: 0,
            start: offset,
            elements_offset: offset,
            flexible: false,
            _element: core::marker::PhantomData,
        }
    }

    /// The number of elements.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when the list has no elements.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The byte range of the whole field in the frame: count prefix and elements.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.elements_offset + self.bytes.len()
    }

    /// Where the count prefix lies in the frame (int32, or uvarint in flexible versions
    /// and for tagged fields); empty for tagged fields in a version that has none.
    pub const fn count_range(&self) -> Range<usize> {
        self.start..self.elements_offset
    }

    /// The elements' bytes as they are on the wire (count prefix excluded).
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl<'a, T: Element<'a>> IntoIterator for List<'a, T> {
    type Item = T;
    type IntoIter = ListIter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T: Element<'a>> IntoIterator for &List<'a, T> {
    type Item = T;
    type IntoIter = ListIter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Compares the elements' values, not where they lie in their frames.
impl<'a, T: Element<'a> + PartialEq> PartialEq for List<'a, T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<'a, T: Element<'a> + fmt::Debug> fmt::Debug for List<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over a [`List`]. Cannot fail: the bytes were checked when the message was parsed.
pub struct ListIter<'a, T> {
    rest: &'a [u8],
    left: usize,
    cx: Cx,
    _element: core::marker::PhantomData<fn() -> T>,
}

impl<'a, T> Clone for ListIter<'a, T> {
    fn clone(&self) -> Self {
        ListIter {
            rest: self.rest,
            left: self.left,
            cx: self.cx,
            _element: core::marker::PhantomData,
        }
    }
}

impl<'a, T: Element<'a>> Iterator for ListIter<'a, T> {
    type Item = T;

    // Always inlined: the element's view is built in the caller's registers rather than
    // returned through memory (a measured third of the time of re-emitting a response).
    #[inline(always)]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        // The list was validated element by element with this same parser, so this cannot
        // fail; if it somehow did, the iterator ends rather than panics. Nothing can fail,
        // so the parser runs in nom's `Check` error mode: no error is built.
        match T::process::<OutputM<Emit, Check, Streaming>>(self.cx, self.rest) {
            Ok((rest, element)) => {
                self.rest = rest;
                self.left -= 1;
                Some(element)
            }
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a, T: Element<'a>> ExactSizeIterator for ListIter<'a, T> {}
impl<'a, T: Element<'a>> FusedIterator for ListIter<'a, T> {}

/// A lazy `[]int32`: parsing checked only that `4 * len` bytes are there.
#[derive(Clone, Copy)]
pub struct Int32List<'a> {
    bytes: &'a [u8],
    start: usize,
    elements_offset: usize,
}

impl<'a> Int32List<'a> {
    pub(crate) const fn new(bytes: &'a [u8], start: usize, elements_offset: usize) -> Self {
        Int32List {
            bytes,
            start,
            elements_offset,
        }
    }

    /// The number of elements.
    pub const fn len(&self) -> usize {
        self.bytes.len() / 4
    }

    /// True when the list has no elements.
    pub const fn is_empty(&self) -> bool {
        self.bytes.len() < 4
    }

    /// The element at `index`, or `None` past the end.
    #[inline]
    pub fn get(&self, index: usize) -> Option<i32> {
        let at = index.checked_mul(4)?;
        let chunk = self.bytes.get(at..at.checked_add(4)?)?;
        Some(be_i32(chunk))
    }

    /// Iterates over the elements, from either end.
    #[inline]
    pub fn iter(&self) -> Int32Iter<'a> {
        // `bytes` is a whole number of words: the parser took exactly `4 * count` bytes.
        Int32Iter { bytes: self.bytes }
    }

    /// The byte range of the whole field in the frame: count prefix and elements.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.elements_offset + self.bytes.len()
    }

    /// Where the count prefix lies in the frame (int32, or uvarint in flexible versions).
    pub const fn count_range(&self) -> Range<usize> {
        self.start..self.elements_offset
    }

    /// Where the element at `index` lies in the frame (4 bytes), or `None` past the end.
    pub const fn element_range(&self, index: usize) -> Option<Range<usize>> {
        if index >= self.len() {
            return None;
        }
        let at = self.elements_offset + 4 * index;
        Some(at..at + 4)
    }

    /// The elements as they are on the wire: big-endian, 4 bytes each.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

#[inline(always)]
fn be_i32(chunk: &[u8]) -> i32 {
    // Every slice handed here is exactly 4 bytes long.
    <[u8; 4]>::try_from(chunk).map_or(0, i32::from_be_bytes)
}

/// Compares the values, not where they lie.
impl PartialEq for Int32List<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl fmt::Debug for Int32List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for Int32List<'a> {
    type Item = i32;
    type IntoIter = Int32Iter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &Int32List<'a> {
    type Item = i32;
    type IntoIter = Int32Iter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over an [`Int32List`], from the front or the back.
#[derive(Clone, Debug)]
pub struct Int32Iter<'a> {
    /// The words not yet yielded; always a multiple of 4 bytes long.
    bytes: &'a [u8],
}

impl Iterator for Int32Iter<'_> {
    type Item = i32;

    #[inline]
    fn next(&mut self) -> Option<i32> {
        let (word, rest) = split_word(self.bytes)?;
        self.bytes = rest;
        Some(word)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.bytes.len() / 4;
        (n, Some(n))
    }

    #[inline]
    fn nth(&mut self, n: usize) -> Option<i32> {
        let skip = n.saturating_mul(4).min(self.bytes.len());
        self.bytes = &self.bytes[skip..];
        self.next()
    }

    // A loop over whole words, which the compiler unrolls and vectorizes (`sum`, `for_each`,
    // `max` and most adapters end here), where `next` goes one word at a time. Only where
    // the target has a byte shuffle (x86-64 from SSSE3): on baseline x86-64 (SSE2) the
    // vectorized byte swaps measured slower than swapping one word at a time, which is
    // what the default `fold` over `next` does.
    #[cfg(any(not(target_arch = "x86_64"), target_feature = "ssse3"))]
    #[inline]
    fn fold<B, F: FnMut(B, i32) -> B>(self, init: B, mut f: F) -> B {
        let mut acc = init;
        for word in self.bytes.chunks_exact(4) {
            acc = f(acc, be_i32(word));
        }
        acc
    }
}

/// The first word of `bytes` and the rest, if there are 4 bytes.
#[inline(always)]
fn split_word(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let (word, rest) = (bytes.get(..4)?, bytes.get(4..)?);
    Some((be_i32(word), rest))
}

impl DoubleEndedIterator for Int32Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<i32> {
        let at = self.bytes.len().checked_sub(4)?;
        let word = be_i32(&self.bytes[at..]);
        self.bytes = &self.bytes[..at];
        Some(word)
    }
}

impl ExactSizeIterator for Int32Iter<'_> {}
impl FusedIterator for Int32Iter<'_> {}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn words(n: i32) -> ([u8; 4 * 37], usize) {
        let mut bytes = [0u8; 4 * 37];
        for (i, word) in bytes.chunks_exact_mut(4).enumerate().take(n as usize) {
            let v = (i as i32 - 5).wrapping_mul(0x0102_0304);
            word.copy_from_slice(&v.to_be_bytes());
        }
        (bytes, 4 * n as usize)
    }

    fn expected(n: i32) -> impl DoubleEndedIterator<Item = i32> {
        (0..n).map(|i| (i - 5).wrapping_mul(0x0102_0304))
    }

    // `fold` (vectorized where the target allows), `next`, `next_back` and `nth` must agree,
    // for every length, including the ones that leave a partial block of words.
    #[test]
    fn int32_iter_ways_agree() {
        for n in 0..=37 {
            let (bytes, len) = words(n);
            let list = Int32List::new(&bytes[..len], 0, 4);
            assert_eq!(list.len(), n as usize);
            let folded = list.iter().fold(Vec::new(), |mut v, p| {
                v.push(p);
                v
            });
            assert!(folded.iter().copied().eq(expected(n)), "fold, n = {n}");
            let mut it = list.iter();
            let mut stepped = Vec::new();
            while let Some(p) = it.next() {
                assert_eq!(it.len(), n as usize - stepped.len() - 1);
                stepped.push(p);
            }
            assert_eq!(stepped, folded);
            assert!(list.iter().rev().eq(expected(n).rev()), "rev, n = {n}");
            let sum: i64 = list.iter().map(i64::from).sum();
            assert_eq!(sum, expected(n).map(i64::from).sum::<i64>());
            for k in 0..=n as usize + 1 {
                assert_eq!(list.iter().nth(k), expected(n).nth(k), "nth({k}), n = {n}");
                assert_eq!(list.get(k), expected(n).nth(k), "get({k}), n = {n}");
            }
            // Mixed ends, then fold what is left.
            let mut it = list.iter();
            let front = it.next();
            let back = it.next_back();
            let mut exp = expected(n);
            assert_eq!((front, back), (exp.next(), exp.next_back()));
            assert!(it.eq(exp));
        }
    }
}
