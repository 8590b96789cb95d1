# Schemathesis extension hooks for Portico's own string formats (api/src/shared/http/schemas.ts Text()): free text
# without control characters (Cc), format characters (Cf) except ZWNJ/ZWJ, surrogates (Cs) and line or
# paragraph separators (Zl, Zp); `text-not-blank` also shows something other than spaces and joiners.
# Loaded through SCHEMATHESIS_HOOKS by testkit/schemathesis.ts.
import schemathesis
from hypothesis import strategies as st

JOINERS = "\u200c\u200d"
character = st.one_of(st.characters(exclude_categories=["Cc", "Cf", "Cs", "Zl", "Zp"]), st.sampled_from(list(JOINERS)))
text = st.text(character, max_size=64)

schemathesis.openapi.format("text", text)
schemathesis.openapi.format("text-not-blank", text.filter(lambda value: any(not (c.isspace() or c in JOINERS) for c in value)))

# `us-zip`: a ZIP code the API's bundled centroid data knows (core/src/catalog/geo.ts); any five digits would
# mostly name none, which the API rightly refuses.
schemathesis.openapi.format("us-zip", st.sampled_from(["53703", "10001", "60601", "94103", "02115", "73301", "99501", "96813"]))
