//! Exclusivity from intervals: at most one holder per resource at every
//! instant. A scenario turns what it knows (a server's grants, a client's
//! beliefs) into half-open intervals `[start, end)` of one holder on one
//! resource, on one time axis; [`overlaps`] finds every pair of different
//! holders whose intervals on the same resource share an instant.

use std::collections::BTreeMap;

/// One holder holding one resource over `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval<R, H> {
    /// What is held.
    pub resource: R,
    /// Who holds it.
    pub holder: H,
    /// First instant held.
    pub start: u64,
    /// First instant no longer held (`u64::MAX`: never released).
    pub end: u64,
}

/// Every pair `(i, j)` (indices into `intervals`, `i` starting first, then by
/// index) of intervals on one resource, of different holders, that overlap.
/// Empty intervals never overlap anything.
pub fn overlaps<R: Ord, H: PartialEq>(intervals: &[Interval<R, H>]) -> Vec<(usize, usize)> {
    let mut by_resource: BTreeMap<&R, Vec<usize>> = BTreeMap::new();
    for (i, iv) in intervals.iter().enumerate() {
        if iv.start < iv.end {
            by_resource.entry(&iv.resource).or_default().push(i);
        }
    }
    let mut found = Vec::new();
    for (_, mut ids) in by_resource {
        ids.sort_by_key(|&i| (intervals[i].start, i));
        // Sweep by start: each interval against the open ones that end after it starts.
        let mut open: Vec<usize> = Vec::new();
        for &j in &ids {
            let b = &intervals[j];
            open.retain(|&i| intervals[i].end > b.start);
            for &i in &open {
                if intervals[i].holder != b.holder {
                    found.push((i, j));
                }
            }
            open.push(j);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(
        resource: &'static str,
        holder: u32,
        start: u64,
        end: u64,
    ) -> Interval<&'static str, u32> {
        Interval {
            resource,
            holder,
            start,
            end,
        }
    }

    #[test]
    fn back_to_back_intervals_and_other_resources_do_not_overlap() {
        let ivs = [iv("a", 1, 0, 10), iv("a", 2, 10, 20), iv("b", 3, 5, 15)];
        assert!(overlaps(&ivs).is_empty());
    }

    #[test]
    fn two_holders_sharing_an_instant_are_reported_once_per_pair() {
        let ivs = [
            iv("a", 1, 0, 11),
            iv("a", 2, 10, 20),
            iv("a", 1, 12, 30),
            iv("a", 3, 25, u64::MAX),
        ];
        assert_eq!(overlaps(&ivs), vec![(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn one_holder_may_overlap_itself_and_empty_intervals_count_for_nothing() {
        let ivs = [iv("a", 1, 0, 10), iv("a", 1, 5, 15), iv("a", 2, 7, 7)];
        assert!(overlaps(&ivs).is_empty());
    }
}
