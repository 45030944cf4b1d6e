"""`colltune app`: from a program to a verdict (issue 38)."""
