"""Reading logs back (every record checked), merging processes, rendering the report (text, JSON, HTML)."""
