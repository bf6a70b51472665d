//! One stable sort for the crate and its users, so that the web app's wasm carries a single small
//! sort instead of one copy of the standard library's sort per element and comparator type.
//!
//! `slice::sort_by` is generic over both the element and the closure, and each instantiation
//! brings a dozen helper functions; in a browser build that added up to tens of kilobytes. Here
//! one non-generic merge sort orders indices through a `&dyn` comparator, and the items are then
//! moved into that order. The result is exactly that of `slice::sort_by`: a stable sort's output
//! is determined by the comparator alone, ties keeping their input order.

use std::cmp::Ordering;

/// The stable order of `len` items compared by index: position `k` of the result is the index of
/// the item that sorts `k`th.
pub fn sorted_indices(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    // A bottom-up merge sort: runs of `width` items are merged pairwise into `merged`, and the
    // two buffers swap roles until one run covers everything. It is written out rather than
    // calling `slice::sort_by` because the standard sort is several kilobytes of wasm even once.
    let mut order: Vec<usize> = (0..len).collect();
    let mut merged = vec![0; len];
    let mut width = 1;
    while width < len {
        let mut start = 0;
        while start < len {
            let mid = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            let (mut left, mut right) = (start, mid);
            for slot in &mut merged[start..end] {
                // The right run goes first only when strictly smaller, so ties keep input order.
                if right < end && (left == mid || cmp(order[right], order[left]) == Ordering::Less) {
                    *slot = order[right];
                    right += 1;
                } else {
                    *slot = order[left];
                    left += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

/// Sorts `items` stably by `cmp`, like `slice::sort_by`, through the one sort of
/// [`sorted_indices`].
pub fn sort_by<T>(items: &mut Vec<T>, cmp: &dyn Fn(&T, &T) -> Ordering) {
    let order = sorted_indices(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    // Each index occurs once in `order`, so every slot is taken exactly once.
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// Sorts `items` in their natural order, like `slice::sort`.
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, &T::cmp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same result as the standard stable sort, ties included: pairs compared by their
        /// first field only keep the input order of their second.
        #[test]
        fn matches_the_standard_stable_sort(items in proptest::collection::vec((0u8..8, any::<u32>()), 0..300)) {
            let mut expected = items.clone();
            expected.sort_by_key(|p| p.0);
            let mut got = items;
            sort_by(&mut got, &|a, b| a.0.cmp(&b.0));
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn sorts_strings_in_natural_order(items in proptest::collection::vec("[a-c]{0,3}", 0..50)) {
            let mut expected = items.clone();
            expected.sort();
            let mut got = items;
            sort(&mut got);
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn sorted_indices_name_the_items_in_order() {
        let keys = [30, 10, 20, 10];
        assert_eq!(sorted_indices(keys.len(), &|a, b| keys[a].cmp(&keys[b])), [1, 3, 2, 0]);
        assert!(sorted_indices(0, &|_, _| Ordering::Equal).is_empty());
    }
}
