package manifest

// pyURL is pydantic's URL types (AnyUrl, HttpUrl, ...) on a string.
func (w *normalizer) pyURL(v any) (result, *normError) {
	s, isStr := v.(string)
	if !isStr {
		return result{}, w.fail("url_type", "expected a string, found %s", jsonKind(v))
	}
	return ok(s, lax)
}
