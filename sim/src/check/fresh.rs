//! Freshness of version tokens (SPEC E1): every successful mutation of a
//! resource yields a token (an ETag) never seen before for that resource.

use super::{PropertyId, Violation};
use std::collections::BTreeMap;

/// A token produced by a successful mutation: `(resource, token, op id)`.
pub type Produced<'a> = (&'a str, &'a str, u64);

/// Reports the first token produced twice for one resource, naming `property`.
pub fn check_fresh<'a>(
    property: impl Into<PropertyId>,
    produced: impl IntoIterator<Item = Produced<'a>>,
) -> Option<Violation> {
    let mut seen: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for (key, token, op) in produced {
        if let Some(first) = seen.insert((key, token), op) {
            // One op writing a resource twice (a batch's steps) gets a new
            // token each time too.
            let message = if first == op {
                format!(
                    "{key}: op {op} got the token {token} for two of its writes to the resource"
                )
            } else {
                format!(
                    "{key}: op {op} got the token {token}, which op {first} had already got for the same resource"
                )
            };
            let ops = if first == op {
                vec![op]
            } else {
                vec![op, first]
            };
            return Some(Violation::new(property, message).with_ops(ops));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_tokens_pass_and_a_repeat_fails() {
        assert!(check_fresh("E1", [("a", "1", 0), ("a", "2", 1), ("b", "1", 2)]).is_none());
        let v = check_fresh("E1", [("a", "1", 0), ("b", "1", 1), ("a", "1", 5)]).unwrap();
        assert_eq!(v.property, "E1");
        assert_eq!(v.ops, vec![5, 0]);
        let v = check_fresh("E1", [("a", "1", 3), ("a", "1", 3)]).unwrap();
        assert_eq!(v.ops, vec![3]);
        assert!(v.message.contains("two of its writes"), "{}", v.message);
    }
}
