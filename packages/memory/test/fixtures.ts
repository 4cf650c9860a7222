/** A profile as seed 003 lays one out: identity frontmatter, canonical H2 sections with anchors. */
export const PROFILE = `---
id: part-42
user_id: u1
schema: 3
participants: [u1]
title: Inner critic
---
# Inner critic

## Concerns
<!-- @anchor: concerns v1 -->
Worries about deadlines.
Keeps lists.

## Evidence
<!-- @anchor: evidence v1 -->
- "I never finish anything" (ev:2026-01-02)
- "Lists keep me safe" (ev:2026-01-05)

## Change Log
<!-- @anchor: change-log v1 -->
- 2026-01-05: created

\`\`\`
<!-- @anchor: not-an-anchor v1 -->
\`\`\`
`
