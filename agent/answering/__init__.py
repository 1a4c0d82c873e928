"""Getting an answer from a model: the reply forms and how they are read back."""
