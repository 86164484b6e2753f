"""kafka"""
