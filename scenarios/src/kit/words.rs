//! ETags and request conditions in a few characters, for a failure page's
//! labels.

/// An ETag in a few characters for a bar's label: `"0x8D0000000000002A"` → `…002A`.
pub fn short_etag(etag: &str) -> String {
    let t = etag.trim_matches('"');
    if t == "*" || t.chars().count() <= 6 {
        return t.to_string();
    }
    let tail: String = t.chars().skip(t.chars().count() - 4).collect();
    format!("…{tail}")
}

/// ` If-Match …002A` / ` If-None-Match *`: a request's conditions, shortly.
pub fn conditions_words(if_match: Option<&str>, if_none_match: Option<&str>) -> String {
    let mut w = String::new();
    if let Some(m) = if_match {
        w += &format!(" If-Match {}", short_etag(m));
    }
    if let Some(m) = if_none_match {
        w += &format!(" If-None-Match {}", short_etag(m));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_shortened_to_their_tail_and_stars_stay() {
        assert_eq!(short_etag("\"0x8D0000000000002A\""), "…002A");
        assert_eq!(short_etag("*"), "*");
        assert_eq!(
            conditions_words(Some("\"0x8D00000000000001\""), None),
            " If-Match …0001"
        );
    }
}
