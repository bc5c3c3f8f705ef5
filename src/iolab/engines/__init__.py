"""Database engines that iolab provisions on a layout: one module each behind one interface."""
